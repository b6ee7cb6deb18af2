// The standard library headers kiln's sources use, precompiled once per build (KILN_PCH in
// CMakeLists.txt): they are ~98% of what a typical kiln translation unit parses, so a fresh build
// (CI's, a user's first) parses them once instead of in every file. Only the standard library
// goes here: a kiln header in it would be seen by every layer, below its own.
#pragma once
#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>
