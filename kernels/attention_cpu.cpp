// Attention and every per-row statistic in one pass over each block of scores, on the CPU (issue 43).
//
// Built and loaded by kernels/compiled_cpu.py (the system C++ compiler, against the installed torch's headers);
// registered as torch.ops.inspector_cpu.attention_stats. The contract is kernels.reference.blocked_attention's:
// q (B, H, Q, D), k and v (B, KVH, K, D), all float32 (any strides); queries are the last Q of the K positions;
// query i at position p sees key j when j <= p (causal), p - window < j (a sliding window) and key_padding[b][j].
//
// The work is cut into tasks, one per key/value head, batch entry and block of query rows (the block's rows of every
// query head that shares the key/value head), spread over the threads. Each task, in its own cache-sized buffers:
//   S = (scale * Q_block) K^T            one GEMM, keys cut to the block's visible range (causal blocks skip the
//                                        keys no row of the block sees, windows the keys before it);
//   per row, in cache: m = max_j s_j, e_j = exp(s_j - m), l = sum e_j, t = sum e_j (s_j - m)
//                                        (invisible keys get e_j = 0);
//   O = E V                              the second GEMM, each row then scaled by 1 / l;
//   weights e_j / l                      only when asked for (the layers whose heatmaps are drawn).
// The GEMMs call the BLAS sgemm inside the loaded libtorch_cpu (MKL on x86) on one thread each, as PyTorch's own
// flash-attention CPU kernel does; where torch exports none, at::mm_out on the same buffers.
// The statistics follow exactly: lse = m + log l, entropy H = log l - t / l (both terms are >= 0, so nothing
// cancels: this is why the kernel accumulates sum e_j (s_j - m) instead of sum p_j s_j), sink = e_0 / l.
// Sums run in float32 vectors over at most kChunk keys and are added in double, so the rounding stays at about
// kChunk / lanes float32 additions whatever the row length.

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
#define CPU_CAPABILITY AVX512
#define CPU_CAPABILITY_AVX512
#elif defined(__AVX2__) && defined(__FMA__)
#define CPU_CAPABILITY AVX2
#define CPU_CAPABILITY_AVX2
#else
#define CPU_CAPABILITY DEFAULT
#endif

#include <dlfcn.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <tuple>

namespace {

using Vec = at::vec::Vectorized<float>;
constexpr int64_t kChunk = 256;  // keys summed in float32 vectors before the partial sums go to double
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// With block_rows = 0, a task's block holds as many query rows as keep its scores within kBlockFloats (in cache
// through both GEMMs and the pass between them), at least kMinRows, at most kMaxRows (a 512-token bidirectional
// block of 256 rows ran 1-3 % faster than one of 512), and few enough that every thread gets tasks.
constexpr int64_t kBlockFloats = 256 * 1024;
constexpr int64_t kMinRows = 16;
constexpr int64_t kMaxRows = 256;
constexpr int64_t kTasksPerThread = 4;

using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                       const int*, const float*, const int*, const float*, float*, const int*);

// The Fortran sgemm the loaded libtorch_cpu exports (MKL's on x86 builds), or nullptr.
Sgemm find_sgemm() {
  static const Sgemm found = [] {
    void* torch_cpu = dlopen("libtorch_cpu.so", RTLD_LAZY | RTLD_NOLOAD);
    return torch_cpu == nullptr ? nullptr : reinterpret_cast<Sgemm>(dlsym(torch_cpu, "sgemm_"));
  }();
  return found;
}

// Row-major C (m x n, row stride ldc) = A (m x k, row stride lda) . op(B), where op(B) = B^T for B stored n x k
// (b_transposed) and B for B stored k x n, row stride ldb. Called from inside the parallel loop: one thread.
void matmul(const float* a, int64_t lda, const float* b, int64_t ldb, bool b_transposed, float* c, int64_t ldc,
            int64_t m, int64_t n, int64_t k) {
  if (const Sgemm sgemm = find_sgemm()) {  // column-major: C^T (n x m) = op(B)^T . A^T
    const int rows = int(n), cols = int(m), inner = int(k), ld_b = int(ldb), ld_a = int(lda), ld_c = int(ldc);
    const float one = 1.0f, zero = 0.0f;
    sgemm(b_transposed ? "T" : "N", "N", &rows, &cols, &inner, &one, b, &ld_b, a, &ld_a, &zero, c, &ld_c);
    return;
  }
  const auto options = at::TensorOptions().dtype(at::kFloat);
  const at::Tensor left = at::from_blob(const_cast<float*>(a), {m, k}, {lda, 1}, options);
  const at::Tensor right = b_transposed ? at::from_blob(const_cast<float*>(b), {n, k}, {ldb, 1}, options).t()
                                        : at::from_blob(const_cast<float*>(b), {k, n}, {ldb, 1}, options);
  at::Tensor result = at::from_blob(c, {m, n}, {ldc, 1}, options);
  at::mm_out(result, left, right);
}

struct RowStats {
  double total = 0.0;     // l = sum_j exp(s_j - m)
  double weighted = 0.0;  // t = sum_j exp(s_j - m) (s_j - m), <= 0
};

// Largest of row[0:n] (kNegInf when n == 0 or every entry is -inf).
float row_max(const float* row, int64_t n) {
  Vec best(kNegInf);
  int64_t j = 0;
  for (; j + Vec::size() <= n; j += Vec::size()) best = at::vec::maximum(best, Vec::loadu(row + j));
  float result = at::vec::vec_reduce_all<float>([](const Vec& a, const Vec& b) { return at::vec::maximum(a, b); },
                                                best);
  for (; j < n; ++j) result = std::max(result, row[j]);
  return result;
}

// row[j] <- exp(row[j] - m) over row[0:n], returning l and t. With `masked` (key padding added -inf to the row),
// -inf entries become exactly 0 and add nothing; without it every entry is finite (a GEMM of finite inputs), and the
// loop skips the guard that keeps 0 * -inf from turning t into NaN.
template <bool masked>
RowStats exp_and_sums(float* row, int64_t n, float m) {
  RowStats sums;
  const Vec shift(m), lowest(std::numeric_limits<float>::lowest());
  for (int64_t start = 0; start < n; start += kChunk) {
    const int64_t stop = std::min(n, start + kChunk);
    Vec total(0.0f), weighted(0.0f);
    int64_t j = start;
    for (; j + Vec::size() <= stop; j += Vec::size()) {
      const Vec u = Vec::loadu(row + j) - shift;
      const Vec e = u.exp_u20();
      e.store(row + j);
      total = total + e;
      if constexpr (masked) {
        weighted = weighted + e * at::vec::maximum(u, lowest);  // e = 0 where u = -inf: 0 * lowest = 0, not NaN
      } else {
        weighted = at::vec::fmadd(e, u, weighted);
      }
    }
    sums.total += at::vec::vec_reduce_all<float>(std::plus<Vec>(), total);
    sums.weighted += at::vec::vec_reduce_all<float>(std::plus<Vec>(), weighted);
    for (; j < stop; ++j) {
      const float u = row[j] - m;
      const float e = std::exp(u);
      row[j] = e;
      sums.total += e;
      sums.weighted += u == kNegInf ? 0.0 : double(e) * u;
    }
  }
  return sums;
}

void add_row(float* row, const float* addend, int64_t n) {
  int64_t j = 0;
  for (; j + Vec::size() <= n; j += Vec::size()) (Vec::loadu(row + j) + Vec::loadu(addend + j)).store(row + j);
  for (; j < n; ++j) row[j] += addend[j];
}

void scale_row(float* target, const float* source, int64_t n, float factor) {
  const Vec scaled(factor);
  int64_t j = 0;
  for (; j + Vec::size() <= n; j += Vec::size()) (Vec::loadu(source + j) * scaled).store(target + j);
  for (; j < n; ++j) target[j] = source[j] * factor;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> attention_stats(
    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale, bool causal, int64_t window,
    const std::optional<at::Tensor>& key_padding, int64_t block_rows, bool with_weights) {
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "q, k, v must be 4-D");
  TORCH_CHECK(q.scalar_type() == at::kFloat && k.scalar_type() == at::kFloat && v.scalar_type() == at::kFloat,
              "q, k, v must be float32");
  TORCH_CHECK(k.sizes() == v.sizes(), "k and v must have the same shape");
  const int64_t batch = q.size(0), heads = q.size(1), q_len = q.size(2), dim = q.size(3);
  const int64_t kv_heads = k.size(1), k_len = k.size(2);
  TORCH_CHECK(k.size(0) == batch && k.size(3) == dim && kv_heads > 0 && heads % kv_heads == 0 && q_len <= k_len,
              "k, v do not match q");
  TORCH_CHECK(block_rows >= 0, "block_rows must be 0 (chosen here) or positive");
  const int64_t group = heads / kv_heads, offset = k_len - q_len;

  // Padding as an additive row per batch entry (0 for a real key, -inf for padding) and prefix counts of real
  // keys (the visible-key count bounds the entropy).
  at::Tensor pad_add, pad_prefix;
  if (key_padding.has_value()) {
    const at::Tensor& padding = *key_padding;
    TORCH_CHECK(padding.scalar_type() == at::kBool && padding.dim() == 2 && padding.size(0) == batch &&
                padding.size(1) == k_len, "key_padding must be bool (batch, k_len)");
    pad_add = at::zeros({batch, k_len}, q.options()).masked_fill_(padding.logical_not(), kNegInf).contiguous();
    pad_prefix = at::constant_pad_nd(padding.to(at::kLong).cumsum(1), {1, 0}).contiguous();
  }
  const float* pad_add_ptr = pad_add.defined() ? pad_add.data_ptr<float>() : nullptr;
  const int64_t* pad_prefix_ptr = pad_prefix.defined() ? pad_prefix.data_ptr<int64_t>() : nullptr;

  // The output is laid out (B, Q, H, D) and returned as its (B, H, Q, D) view: transformers transposes it back to
  // (B, Q, H, D) and asks for a contiguous tensor, which this layout makes free (PyTorch's flash kernel does the same).
  at::Tensor out = at::empty({batch, q_len, heads, dim}, q.options());
  at::Tensor lse = at::empty({batch, heads, q_len}, q.options());
  at::Tensor entropy = at::empty({batch, heads, q_len}, q.options());
  at::Tensor sink = at::empty({batch, heads, q_len}, q.options());
  float* out_ptr = out.data_ptr<float>();
  float* lse_ptr = lse.data_ptr<float>();
  float* entropy_ptr = entropy.data_ptr<float>();
  float* sink_ptr = sink.data_ptr<float>();
  // The exact weights e_j / l, when asked for: written from the block in cache, instead of recomputed later.
  at::Tensor weights = at::empty(with_weights ? at::IntArrayRef{batch, heads, q_len, k_len} : at::IntArrayRef{0},
                                 q.options());
  float* weights_ptr = with_weights ? weights.data_ptr<float>() : nullptr;

  // log(visible keys), the entropy's upper bound, for every count a row can have: one log per count, not per row.
  std::vector<double> log_count(k_len + 1);
  for (int64_t count = 0; count <= k_len; ++count) log_count[count] = std::log(double(std::max<int64_t>(count, 1)));
  // BLAS needs unit stride along the head dimension (transformers' transposed views have it).
  const at::Tensor qs = q.stride(3) == 1 ? q : q.contiguous();
  const at::Tensor ks = k.stride(3) == 1 ? k : k.contiguous();
  const at::Tensor vs = v.stride(3) == 1 ? v : v.contiguous();
  const float* q_ptr = qs.data_ptr<float>();
  const float* k_ptr = ks.data_ptr<float>();
  const float* v_ptr = vs.data_ptr<float>();
  const int64_t pairs = batch * kv_heads;
  if (block_rows == 0) {
    const int64_t wanted_tasks = kTasksPerThread * at::get_num_threads();
    const int64_t fits = kBlockFloats / std::max<int64_t>(1, group * k_len);
    const int64_t spread = (q_len * pairs + wanted_tasks - 1) / wanted_tasks;
    block_rows = std::max<int64_t>(kMinRows, std::min({fits, spread, kMaxRows}));
  }
  const int64_t blocks = (q_len + block_rows - 1) / block_rows;

  at::parallel_for(0, pairs * blocks, 1, [&](int64_t task_begin, int64_t task_end) {
    std::vector<float> queries, scores, mixed, inverse;
    for (int64_t task = task_begin; task < task_end; ++task) {
      // Blocks in the order 0, n-1, 1, n-2, ...: the threads' contiguous shares of tasks get early (short, under a
      // causal mask) and late (long) blocks alike.
      const int64_t pair = task / blocks, place = task % blocks;
      const int64_t block = place % 2 == 0 ? place / 2 : blocks - 1 - place / 2;
      const int64_t b = pair / kv_heads, kv_head = pair % kv_heads;
      const int64_t first = block * block_rows, rows = std::min(block_rows, q_len - first), m = group * rows;
      const int64_t key_stop = causal ? offset + first + rows : k_len;  // the block's last row sees up to here
      const int64_t key_start = window > 0 ? std::max<int64_t>(0, offset + first - window + 1) : 0;
      const int64_t keys = key_stop - key_start;
      queries.resize(m * dim);
      scores.resize(m * keys);
      mixed.resize(m * dim);
      inverse.resize(m);
      for (int64_t g = 0; g < group; ++g) {
        for (int64_t ii = 0; ii < rows; ++ii) {
          const float* source = q_ptr + b * qs.stride(0) + (kv_head * group + g) * qs.stride(1) +
                                (first + ii) * qs.stride(2);
          scale_row(queries.data() + (g * rows + ii) * dim, source, dim, float(scale));
        }
      }
      const float* key_rows = k_ptr + b * ks.stride(0) + kv_head * ks.stride(1) + key_start * ks.stride(2);
      matmul(queries.data(), dim, key_rows, ks.stride(2), true, scores.data(), keys, m, keys, dim);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t bh = b * heads + kv_head * group + g;
        for (int64_t ii = 0; ii < rows; ++ii) {
          const int64_t i = first + ii, r = g * rows + ii, position = offset + i;
          const int64_t lo = std::max(window > 0 ? position - window + 1 : 0, key_start);
          const int64_t hi = std::min(causal ? position + 1 : k_len, key_stop);
          float* row = scores.data() + r * keys;
          const int64_t stat = bh * q_len + i;
          const int64_t seen_lo = lo - key_start, seen_hi = std::max(hi, lo) - key_start;
          std::fill(row, row + seen_lo, 0.0f);
          std::fill(row + seen_hi, row + keys, 0.0f);
          const int64_t n = seen_hi - seen_lo;
          if (pad_add_ptr != nullptr) add_row(row + seen_lo, pad_add_ptr + b * k_len + lo, n);
          const float row_top = row_max(row + seen_lo, n);
          int64_t visible = n;
          if (pad_prefix_ptr != nullptr && n > 0) {
            visible = pad_prefix_ptr[b * (k_len + 1) + hi] - pad_prefix_ptr[b * (k_len + 1) + lo];
          }
          float* weight_row = weights_ptr == nullptr ? nullptr : weights_ptr + stat * k_len;
          if (row_top == kNegInf) {  // no visible key: output 0, entropy 0, sink 0, log-sum-exp -inf
            std::fill(row + seen_lo, row + seen_hi, 0.0f);
            inverse[r] = 0.0f;
            lse_ptr[stat] = kNegInf;
            entropy_ptr[stat] = 0.0f;
            sink_ptr[stat] = 0.0f;
            if (weight_row != nullptr) std::fill(weight_row, weight_row + k_len, 0.0f);
            continue;
          }
          const RowStats sums = pad_add_ptr != nullptr ? exp_and_sums<true>(row + seen_lo, n, row_top)
                                                        : exp_and_sums<false>(row + seen_lo, n, row_top);
          const double log_total = std::log(sums.total), inverse_total = 1.0 / sums.total;
          inverse[r] = float(inverse_total);
          lse_ptr[stat] = float(double(row_top) + log_total);
          entropy_ptr[stat] = float(std::clamp(log_total - sums.weighted * inverse_total, 0.0, log_count[visible]));
          sink_ptr[stat] = key_start == 0 && lo == 0 ? float(row[0] * inverse_total) : 0.0f;
          if (weight_row != nullptr) {
            std::fill(weight_row, weight_row + key_start, 0.0f);
            scale_row(weight_row + key_start, row, keys, inverse[r]);
            std::fill(weight_row + key_stop, weight_row + k_len, 0.0f);
          }
        }
      }
      const float* value_rows = v_ptr + b * vs.stride(0) + kv_head * vs.stride(1) + key_start * vs.stride(2);
      matmul(scores.data(), keys, value_rows, vs.stride(2), false, mixed.data(), dim, m, dim, keys);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t head = kv_head * group + g;
        for (int64_t ii = 0; ii < rows; ++ii) {
          const int64_t r = g * rows + ii;
          scale_row(out_ptr + ((b * q_len + first + ii) * heads + head) * dim, mixed.data() + r * dim, dim,
                    inverse[r]);
        }
      }
    }
  });
  return {out.transpose(1, 2), lse, entropy, sink, weights};
}

}  // namespace

TORCH_LIBRARY(inspector_cpu, m) {
  m.def("attention_stats(Tensor q, Tensor k, Tensor v, float scale, bool causal, int window, Tensor? key_padding, "
        "int block_rows, bool with_weights) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
        &attention_stats);
}
