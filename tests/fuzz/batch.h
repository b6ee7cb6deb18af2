// Many graphs' kernels in one compiler call, the fuzzer's throughput (tests/fuzz/README.md,
// "Throughput"). A generated translation unit is the scalar prelude (~0.5 s of the compiler's
// time to parse) and a few small kernels (~0.03-0.2 s): compiled one graph at a time, the
// compiler would spend most of a fuzz run on the same prelude. A KernelBatch is the hook of
// tile::cpu::set_prebuilt_hook: between open() and close() the sources the backends hand to
// compile_source wait; close() compiles them together (the prelude once, each unit's kernels in
// a namespace of their own, its entry symbols renamed) and each waiter loads the shared object.
//
// A backend compiles a graph at its first call (AOT sees the inputs then) and that call waits
// for the kernels, so each graph is checked on a thread of its own ("a task"):
//
//   KernelBatch batch;
//   batch.open(graphs.size());
//   for (...) threads.emplace_back([&] { outcome[i] = check(...); batch.task_done(); });
//   batch.close_when_ready("-O1", 2);   // when every task waits for its kernels (or is done)
//   for (...) threads[i].join();
//
// Outside open() .. close() compile_source compiles as usual (-O3, through the disk cache): a
// source that arrives after its batch closed, and the reducer's graphs. A batch that fails to
// compile has each of its sources compiled alone, as usual, so a kernel that does not compile
// is reported with its own file and message.
#pragma once
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace kiln::fuzz {

class KernelBatch {
 public:
  KernelBatch();   // installs the hook
  ~KernelBatch();  // closes an open batch, waits for its compilers, removes the hook
  KernelBatch(const KernelBatch&) = delete;
  KernelBatch& operator=(const KernelBatch&) = delete;

  // From now on the sources handed to compile_source wait for close(); `tasks` threads will
  // hand them over (or finish without: task_done()).
  void open(int tasks);
  void task_done();
  // Waits until each task waits for a source of the batch or is done (or nothing happened for
  // 5 s: a task that compiles nothing but has not finished, or waits for another's identical
  // kernels; shorter, a machine so loaded that a task gets no CPU for a while closed batches
  // of one or two graphs), then starts compiling the sources at optimization level `level`
  // ("-O1"; every other flag is the tile compiler's), in up to `parts` compiler calls at once,
  // and returns; each waiting source gets its object when its part is built.
  void close_when_ready(const std::string& level, int parts = 1);

  struct Stats {
    int batches = 0, units = 0;  // compiled together
    int alone = 0;               // sources that arrived outside a batch (compiled as usual)
    int failed = 0;              // batches that did not compile (their sources then compiled alone)
    int quiet_closes = 0;        // batches closed after 5 quiet seconds rather than all tasks ready
  };
  Stats stats() const;

 private:
  struct State;  // shared with the hook, which a late compile thread may still call
  std::shared_ptr<State> s_;
  std::vector<std::thread> compilers_;
};

}  // namespace kiln::fuzz
