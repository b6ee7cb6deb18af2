// Trains a character-level GPT on a text file, saves a checkpoint, and samples from it.
//
//   example_gpt [--text FILE] [--layers 2] [--d 128] [--heads 4] [--ctx 128] [--batch 16]
//               [--steps 600] [--lr 1e-3] [--minutes M] [--seed 0] [--checkpoint gpt.safetensors]
//               [--sample 400] [--temperature 0.8] [--top-k 20] [--prompt TEXT]
//               [--backend inductor|aot_eager|eager|none] [--device auto|cpu|cuda]
//
// --device auto (the default) trains on the GPU when there is one (eager CUDA tensors: the
// compiler does not target CUDA yet, so there the step runs eagerly, as --backend none), else on
// the CPU.
// The whole training step (forward, loss, backward, gradient clipping, AdamW) runs through
// kiln::compile, captured once as one graph; --backend picks what runs it: "inductor" (the
// default) generates fused C++ kernels for it (docs/compiler.md), "aot_eager" runs the joint
// graph with eager kernels, "eager" interprets the captured graph; "none" runs it all eagerly
// without capture. Evaluation and sampling run eagerly.
// The default text is the GPL-3 that ships with Debian. The loss is printed next to the text's
// unigram entropy (what a model that ignores context achieves), so learning is visible.
#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>

#include "gpt/model.h"

using namespace kiln;

namespace {

struct Args {
  std::string text = "/usr/share/common-licenses/GPL-3";
  std::string checkpoint = "gpt.safetensors";
  std::string prompt = "\n";
  std::string backend = "inductor";  // compile()'s backend for the training step; "none": eager
  bool backend_given = false;
  std::string device = "auto";
  int64_t layers = 2, d = 128, heads = 4, ctx = 128, batch = 16, steps = 600, sample = 400, top_k = 20;
  double lr = 1e-3, minutes = 0, temperature = 0.8;
  uint64_t seed = 0;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value after %s\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--text") a.text = next();
    else if (k == "--checkpoint") a.checkpoint = next();
    else if (k == "--prompt") a.prompt = next();
    else if (k == "--backend") a.backend = next(), a.backend_given = true;
    else if (k == "--device") a.device = next();
    else if (k == "--layers") a.layers = std::stoll(next());
    else if (k == "--d") a.d = std::stoll(next());
    else if (k == "--heads") a.heads = std::stoll(next());
    else if (k == "--ctx") a.ctx = std::stoll(next());
    else if (k == "--batch") a.batch = std::stoll(next());
    else if (k == "--steps") a.steps = std::stoll(next());
    else if (k == "--sample") a.sample = std::stoll(next());
    else if (k == "--top-k") a.top_k = std::stoll(next());
    else if (k == "--lr") a.lr = std::stod(next());
    else if (k == "--minutes") a.minutes = std::stod(next());
    else if (k == "--temperature") a.temperature = std::stod(next());
    else if (k == "--seed") a.seed = std::stoull(next());
    else {
      std::fprintf(stderr, "unknown argument %s (see the comment at the top of examples/gpt.cpp)\n", k.c_str());
      std::exit(2);
    }
  }
  return a;
}

// Characters <-> ids over the characters the text uses.
struct Vocab {
  std::string chars;
  std::map<char, int64_t> id;
  explicit Vocab(const std::string& text) {
    std::set<char> s(text.begin(), text.end());
    chars.assign(s.begin(), s.end());
    for (size_t i = 0; i < chars.size(); ++i) id[chars[i]] = int64_t(i);
  }
};

double unigram_entropy(const std::vector<int64_t>& ids, size_t vocab) {
  std::vector<double> count(vocab, 0);
  for (int64_t t : ids) count[size_t(t)] += 1;
  double h = 0;
  for (double c : count)
    if (c > 0) h -= c / double(ids.size()) * std::log(c / double(ids.size()));
  return h;
}

// A batch of random windows: inputs [B, T] and the next characters as targets.
std::pair<Tensor, Tensor> batch(const std::vector<int64_t>& ids, int64_t B, int64_t T, std::mt19937_64& rng, Device dev) {
  std::uniform_int_distribution<int64_t> pick(0, int64_t(ids.size()) - T - 2);
  std::vector<int64_t> x, y;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t o = pick(rng);
    x.insert(x.end(), ids.begin() + o, ids.begin() + o + T);
    y.insert(y.end(), ids.begin() + o + 1, ids.begin() + o + T + 1);
  }
  return {tensor(x, {B, T}).to(dev), tensor(y, {B, T}).to(dev)};
}

double evaluate(gpt::GPT& model, const std::vector<int64_t>& ids, int64_t B, int64_t T, std::mt19937_64& rng, Device dev) {
  NoGradGuard no_grad;
  model->eval();
  double total = 0;
  const int rounds = 4;
  for (int i = 0; i < rounds; ++i) {
    auto [x, y] = batch(ids, B, T, rng, dev);
    total += model->loss(x, y).item<double>();
  }
  model->train();
  return total / rounds;
}

std::string generate(gpt::GPT& model, const Vocab& v, const std::string& prompt, int64_t n, double temperature,
                     int64_t top_k) {
  NoGradGuard no_grad;
  model->eval();
  std::vector<int64_t> ids;
  for (char c : prompt)
    if (v.id.count(c)) ids.push_back(v.id.at(c));
  if (ids.empty()) ids.push_back(0);
  std::string out;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t start = std::max<int64_t>(0, int64_t(ids.size()) - model->config.ctx);
    std::vector<int64_t> window(ids.begin() + start, ids.end());
    Tensor logits = model(tensor(window, {1, int64_t(window.size())})).select(1, -1).to(kFloat32) / temperature;
    if (top_k > 0 && top_k < logits.size(-1)) {
      Tensor kth = std::get<0>(logits.topk(top_k, -1)).narrow(-1, top_k - 1, 1);
      logits = logits.masked_fill(logits < kth, -INFINITY);
    }
    const int64_t next = softmax(logits, -1).multinomial(1, true).item<int64_t>();
    ids.push_back(next);
    out += v.chars[size_t(next)];
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  if (args.device == "cuda" && !cuda::is_available()) {
    std::fprintf(stderr, "--device cuda: no CUDA GPU: %s\n", cuda::unavailable_reason().c_str());
    return 1;
  }
  const Device dev = args.device == "cuda" || (args.device == "auto" && cuda::is_available()) ? Device("cuda") : kCPU;
  if (dev.is_cuda() && !args.backend_given) args.backend = "none";  // (the compiler targets the CPU only, for now)
  if (dev.is_cuda()) std::printf("device: %s (%s), the step runs eagerly\n", dev.str().c_str(), cuda::get_device_name().c_str());
  std::ifstream f(args.text, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "cannot read %s (pass --text FILE)\n", args.text.c_str());
    return 1;
  }
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  const Vocab vocab(text);
  std::vector<int64_t> ids;
  for (char c : text) ids.push_back(vocab.id.at(c));
  const size_t split = ids.size() * 9 / 10;
  const std::vector<int64_t> train_ids(ids.begin(), ids.begin() + int64_t(split)), val_ids(ids.begin() + int64_t(split), ids.end());
  std::printf("text %s: %zu characters, vocab %zu, unigram entropy %.3f nats/char\n", args.text.c_str(), ids.size(),
              vocab.chars.size(), unigram_entropy(train_ids, vocab.chars.size()));

  manual_seed(args.seed);
  gpt::Config cfg{.vocab = int64_t(vocab.chars.size()), .ctx = args.ctx, .d = args.d, .heads = args.heads, .layers = args.layers};
  gpt::GPT model(cfg);
  model->init_gpt2_weights();
  model->to(dev);  // (initialized on the CPU: the same weights for a seed on either device)
  int64_t nparams = 0;
  for (const Tensor& p : model->parameters()) nparams += p.numel();
  std::printf("model: %lld layers, d %lld, %lld heads, context %lld: %lld parameters\n", (long long)cfg.layers,
              (long long)cfg.d, (long long)cfg.heads, (long long)cfg.ctx, (long long)nparams);

  // capturable: the bias corrections and the lr are tensors, so the update is captured with the
  // rest of the step and the schedule's new lr reaches the compiled step (docs/compile.md).
  optim::AdamW opt(model->parameters(), {.lr = args.lr, .betas = {0.9, 0.99}, .weight_decay = 0.1, .capturable = true});
  auto schedule = optim::warmup_cosine(opt, std::min<int64_t>(50, args.steps / 10 + 1), args.steps, args.lr / 10);
  auto train_step = [&](const Tensor& x, const Tensor& y) {
    Tensor loss = model->loss(x, y);
    loss.backward();
    nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    return loss;
  };
  // Captured once as one graph (guarded: the same shapes and modes reuse it) and run by the
  // chosen backend; zero_grad and the schedule run outside it (docs/compile.md, Training steps).
  CompileOptions co;
  co.backend = args.backend == "none" ? "eager" : args.backend;
  co.name = "gpt train step";
  co.fullgraph = true;
  auto compiled_step = compile(train_step, co);
  std::mt19937_64 rng(args.seed);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  int64_t tokens = 0;
  for (int64_t step = 1; step <= args.steps; ++step) {
    auto [x, y] = batch(train_ids, args.batch, args.ctx, rng, dev);
    opt.zero_grad();
    Tensor loss = args.backend == "none" ? train_step(x, y) : compiled_step(x, y);
    schedule->step();
    tokens += args.batch * args.ctx;
    const bool out_of_time = args.minutes > 0 && elapsed() > args.minutes * 60;
    if (step % 25 == 0 || step == 1 || step == args.steps || out_of_time) {
      std::printf("step %5lld  loss %.4f", (long long)step, loss.item<double>());
      if (step % 100 == 0 || step == args.steps || out_of_time)
        std::printf("  val %.4f", evaluate(model, val_ids, args.batch, args.ctx, rng, dev));
      std::printf("  %.0f tokens/s  %.0fs\n", double(tokens) / elapsed(), elapsed());
      std::fflush(stdout);
    }
    if (out_of_time) break;
  }

  if (args.backend != "none") {
    ExplainReport r = compiled_step.report();
    std::printf("compiled (backend %s): %d graph(s) of %d ops, %zu graph breaks, %zu recompiles\n", args.backend.c_str(),
                r.graph_count, r.ops_per_graph.empty() ? 0 : r.ops_per_graph[0], r.breaks.size(), r.recompile_reasons.size());
  }

  TensorMap state = model->state_dict();
  for (auto& [name, t] : state) t = t.cpu();  // (the file holds host memory; a no-op on the CPU)
  save_safetensors(state, args.checkpoint,
                   {{"vocab", vocab.chars}, {"layers", std::to_string(cfg.layers)}, {"d", std::to_string(cfg.d)},
                    {"heads", std::to_string(cfg.heads)}, {"ctx", std::to_string(cfg.ctx)}});
  std::printf("saved %s\n", args.checkpoint.c_str());

  // Sample from a fresh model loaded from the checkpoint.
  MetadataMap meta;
  TensorMap loaded = load_safetensors(args.checkpoint, &meta);
  gpt::GPT sampler(cfg);
  sampler->load_state_dict(loaded);
  std::printf("--- sample (temperature %.2f, top-k %lld) ---\n%s%s\n", args.temperature, (long long)args.top_k,
              args.prompt.c_str(), generate(sampler, Vocab(meta["vocab"] + ""), args.prompt, args.sample, args.temperature, args.top_k).c_str());
  return 0;
}
