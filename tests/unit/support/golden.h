// One golden runner for every IR (docs/graph-ir.md, "Golden files"). A golden file is
//
//   // pipeline: <pipeline>
//   <input text>                 (may be empty: a capture golden's input is C++ in its test)
//   // expected:
//   <the output the pipeline must print>
//
// A runner maps (pipeline, input) to output text: graph::run_pipeline for the graph IR (its
// pass table holds the graph and aot passes), a test's own table for capture, and next the
// loop IR and tile IR pipelines. With KILN_UPDATE_GOLDENS=1 the expected sections are rewritten
// in place instead of compared (a file without one gets it); read the diff before committing.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace kiln::test {

struct Golden {
  std::filesystem::path path;
  std::string pipeline;  // the header line's text after "// pipeline: "
  std::string input;     // between the header and "// expected:"
  std::string expected;  // after "// expected:\n"
  bool has_expected = false;
};

using GoldenRunner = std::function<std::string(const std::string& pipeline, const std::string& input)>;

// tests/golden/<folder>/*.kir, sorted.
std::vector<std::filesystem::path> golden_files(const std::string& folder);
// Reads a golden file; a malformed one is a test failure (and an empty pipeline).
Golden read_golden(const std::filesystem::path& path);
bool updating_goldens();
// Runs g's pipeline on its input and compares the output with the expected section (or
// rewrites it, when updating). A kiln::Error from the runner is a test failure. Returns the
// output ("" after an error).
std::string check_golden(const Golden& g, const GoldenRunner& run);
// check_golden for every file of tests/golden/<folder>; returns the goldens it read.
std::vector<Golden> check_goldens(const std::string& folder, const GoldenRunner& run);

}  // namespace kiln::test
