#include <benchmark/benchmark.h>
#include <kiln/kiln.h>
BENCHMARK_MAIN();
