// C5 online batches (softlin.stream): Gaussian prompts drawn from a counter-based generator and
// consumed in the same pass, an XLA FFI custom call for the CPU.
//
// The stream.  Normal number k of plane p of prompt i at training step t comes from the
// Philox4x32-10 block with key (seed, stream) and counter (j, i, t, p) (Salmon et al. 2011, the
// Random123 reference; tests check the known-answer vectors), turned into normals by Box-Muller:
//   float32 normals: block j gives 4 words; words (0, 1) and (2, 3) make two pairs, radius
//     sqrt(-2 log u1) with u1 = (w >> 1) 2^-31 + 2^-32 (in float32), angle 2 pi (w' >> 8) 2^-24;
//     normal k = 32 g + 8 q + lane  <->  block j = 8 g + lane, q = 0..3 (cos, sin of pair
//     (0, 1), cos, sin of pair (2, 3));
//   float64 normals: block j gives one pair from 52-bit uniforms
//     u1 = (w0 >> 11) 2^-21 + (w1 >> 1) 2^-52 + 2^-53, angle 2 pi ((w2 >> 11) 2^-21 + (w3 >> 1) 2^-52);
//     normal k = 16 g + 8 q + lane  <->  block j = 8 g + lane, q = 0 (cos), 1 (sin).
// Planes 0..d-1: the standard normals of the prompt covariates (normal l is token l's), plane d:
// the label noise of token l, plane d + 1: the prompt's task w (normals 0..d-1), query covariates
// (d..2d-1) and query noise (2d).  So token l depends on (seed, stream, t, i, l) only: the
// length-L prompt is the prefix of any longer one, and any step's batch is drawn directly.
//
// The prompt (docs/maths.md#c5): x_l = R_p g_l, y_l = w^T x_l + s_noise e_l, w = s_w g_w,
// x_q = R_q g_q, y_q = w^T x_q + s_noise e_q; tokens z_l = (x_l, y_l), query z_q = (x_q, 0).
//
// Entry points (tasks split over OpenMP threads statically; every sum in a fixed order):
//   OnlineSample: the batch itself, zT (n, D, l_gen), zq (n, D), yq (n), w (n, d).
//   OnlineStep:   what one training step of every run needs, without storing the batch:
//     zq, yq; for softmax run r (parameters U_r, v_r, prompt length Ls[r]) the moments
//     m1[r, i] = E_p[z], m2[r, i] = E_p[(v.z) z] (moments.h); and for each length Lk of the
//     ascending list Llin the prompt's second moment G[k, i] = (1/Lk) sum_{l<Lk} z_l z_l^T,
//     all lengths from one pass over the tokens.
#include <math.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <cstring>
#include <string>

#include "moments.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // Philox4x32 multipliers
constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // Weyl key increments
constexpr int W = 8;                                       // blocks per vector group
constexpr double kTwoPi = 6.283185307179586476925286766559;

// Philox4x32-10 of the W counters (j0 + lane, c1, c2, c3) under key (k0, k1).
#if defined(__AVX2__)
static inline void philox_w(uint32_t j0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                            uint32_t k1, uint32_t o0[W], uint32_t o1[W], uint32_t o2[W],
                            uint32_t o3[W]) {
  // 8 lanes in one register per word; _mm256_mul_epu32 multiplies the even 32-bit lanes into
  // 64-bit products, so the odd lanes go through a shifted copy
  const __m256i m0 = _mm256_set1_epi64x(kM0), m1 = _mm256_set1_epi64x(kM1);
  __m256i x0 = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(j0)),
                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256i x1 = _mm256_set1_epi32(static_cast<int>(c1));
  __m256i x2 = _mm256_set1_epi32(static_cast<int>(c2));
  __m256i x3 = _mm256_set1_epi32(static_cast<int>(c3));
  uint32_t a = k0, b = k1;
  for (int r = 0; r < 10; ++r) {
    const __m256i pe0 = _mm256_mul_epu32(x0, m0), po0 = _mm256_mul_epu32(_mm256_srli_epi64(x0, 32), m0);
    const __m256i pe1 = _mm256_mul_epu32(x2, m1), po1 = _mm256_mul_epu32(_mm256_srli_epi64(x2, 32), m1);
    const __m256i lo0 = _mm256_blend_epi32(pe0, _mm256_slli_epi64(po0, 32), 0xAA);
    const __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(pe0, 32), po0, 0xAA);
    const __m256i lo1 = _mm256_blend_epi32(pe1, _mm256_slli_epi64(po1, 32), 0xAA);
    const __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(pe1, 32), po1, 0xAA);
    const __m256i ka = _mm256_set1_epi32(static_cast<int>(a)), kb = _mm256_set1_epi32(static_cast<int>(b));
    x0 = _mm256_xor_si256(_mm256_xor_si256(hi1, x1), ka);
    x1 = lo1;
    x2 = _mm256_xor_si256(_mm256_xor_si256(hi0, x3), kb);
    x3 = lo0;
    a += kW0;
    b += kW1;
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(o0), x0);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(o1), x1);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(o2), x2);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(o3), x3);
}
#else
static inline void philox_w(uint32_t j0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                            uint32_t k1, uint32_t x0[W], uint32_t x1[W], uint32_t x2[W],
                            uint32_t x3[W]) {
  for (int k = 0; k < W; ++k) {
    x0[k] = j0 + static_cast<uint32_t>(k);
    x1[k] = c1;
    x2[k] = c2;
    x3[k] = c3;
  }
  uint32_t a = k0, b = k1;
  for (int r = 0; r < 10; ++r) {
    for (int k = 0; k < W; ++k) {
      const uint64_t p0 = static_cast<uint64_t>(kM0) * x0[k];
      const uint64_t p1 = static_cast<uint64_t>(kM1) * x2[k];
      const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
      const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
      x0[k] = hi1 ^ x1[k] ^ a;
      x1[k] = lo1;
      x2[k] = hi0 ^ x3[k] ^ b;
      x3[k] = lo0;
    }
    a += kW0;
    b += kW1;
  }
}
#endif

// The first `count` normals of one plane, as doubles, into out (room for a whole last group).
static void plane_normals(bool f64, uint32_t k0, uint32_t k1, uint32_t prompt, uint32_t step,
                          uint32_t plane, int64_t count, double* out) {
  uint32_t x0[W], x1[W], x2[W], x3[W];
  const int per = f64 ? 2 * W : 4 * W;
  const int64_t groups = (count + per - 1) / per;
  for (int64_t g = 0; g < groups; ++g) {
    philox_w(static_cast<uint32_t>(g * W), prompt, step, plane, k0, k1, x0, x1, x2, x3);
    double* o = out + g * per;
    // radius and angle first, then cos and sin in loops of their own: GCC fuses a cos and a sin
    // of one argument into sincos, which has no vector variant, and the loop stays scalar
    if (f64) {
      double r[W], th[W];
#pragma omp simd
      for (int k = 0; k < W; ++k) {
        // 52-bit uniforms from 21 + 31 bits, each converted exactly through int32
        const double ua = static_cast<double>(static_cast<int32_t>(x0[k] >> 11)) * 0x1p-21 +
                          static_cast<double>(static_cast<int32_t>(x1[k] >> 1)) * 0x1p-52 + 0x1p-53;
        const double ub = static_cast<double>(static_cast<int32_t>(x2[k] >> 11)) * 0x1p-21 +
                          static_cast<double>(static_cast<int32_t>(x3[k] >> 1)) * 0x1p-52;
        r[k] = ::sqrt(-2.0 * ::log(ua));
        th[k] = kTwoPi * ub;
      }
#pragma omp simd
      for (int k = 0; k < W; ++k) o[k] = r[k] * ::cos(th[k]);
#pragma omp simd
      for (int k = 0; k < W; ++k) o[W + k] = r[k] * ::sin(th[k]);
    } else {
      float r[2 * W], th[2 * W], c[2 * W], sn[2 * W];
#pragma omp simd
      for (int k = 0; k < W; ++k) {
        // 31-bit uniforms in (0, 1] for the radius, 24-bit ones for the angle
        const float ua = static_cast<float>(static_cast<int32_t>(x0[k] >> 1)) * 0x1p-31f + 0x1p-32f;
        const float ub = static_cast<float>(static_cast<int32_t>(x2[k] >> 1)) * 0x1p-31f + 0x1p-32f;
        th[k] = static_cast<float>(kTwoPi) * (static_cast<float>(static_cast<int32_t>(x1[k] >> 8)) * 0x1p-24f);
        th[W + k] = static_cast<float>(kTwoPi) * (static_cast<float>(static_cast<int32_t>(x3[k] >> 8)) * 0x1p-24f);
        r[k] = ::sqrtf(-2.0f * ::logf(ua));
        r[W + k] = ::sqrtf(-2.0f * ::logf(ub));
      }
#pragma omp simd
      for (int k = 0; k < 2 * W; ++k) c[k] = r[k] * ::cosf(th[k]);
#pragma omp simd
      for (int k = 0; k < 2 * W; ++k) sn[k] = r[k] * ::sinf(th[k]);
      for (int k = 0; k < W; ++k) {
        o[k] = c[k];
        o[W + k] = sn[k];
        o[2 * W + k] = c[W + k];
        o[3 * W + k] = sn[W + k];
      }
    }
  }
}

struct Law {
  const double* Rp;  // (d, d): x_l = Rp g_l
  const double* Rq;  // (d, d): x_q = Rq g_q
  double w_sd, noise_sd;
  uint32_t k0, k1, step;
  bool f64;
};

// Scratch of one thread: plane normals (d + 2 planes) and the prompt's tokens z (D x S).
struct Scratch {
  std::vector<double> g, z, s;
  int64_t pitch = 0;
  void resize(int64_t D, int64_t S) {
    pitch = ((S + 4 * W - 1) / (4 * W)) * (4 * W) + 4 * W;
    g.assign((D + 1) * pitch, 0.0);
    z.assign(D * S, 0.0);
    s.assign(S, 0.0);
  }
};

// Draw prompt i (its first S tokens) into sc.z (D rows of stride S), zq (D) and yq; w (d) if given.
template <int D>
static void draw_prompt(const Law& law, uint32_t i, int64_t S, Scratch& sc, double* zq, double* yq,
                        double* w_out) {
  constexpr int d = D - 1;
  double* g = sc.g.data();
  const int64_t P = sc.pitch;
  for (int p = 0; p < D; ++p) plane_normals(law.f64, law.k0, law.k1, i, law.step, p, S, g + p * P);
  plane_normals(law.f64, law.k0, law.k1, i, law.step, D, 2 * d + 1, g + D * P);
  const double* ex = g + D * P;
  double w[d], xq[d];
  for (int j = 0; j < d; ++j) w[j] = law.w_sd * ex[j];
  double yqv = 0.0;
  for (int j = 0; j < d; ++j) {
    double acc = 0.0;
    for (int k = 0; k < d; ++k) acc += law.Rq[j * d + k] * ex[d + k];
    xq[j] = acc;
    yqv += w[j] * acc;
  }
  *yq = yqv + law.noise_sd * ex[2 * d];
  for (int j = 0; j < d; ++j) zq[j] = xq[j];
  zq[d] = 0.0;
  if (w_out) for (int j = 0; j < d; ++j) w_out[j] = w[j];
  double* z = sc.z.data();
  double R[d][d];
  for (int j = 0; j < d; ++j)
    for (int k = 0; k < d; ++k) R[j][k] = law.Rp[j * d + k];
  const double nsd = law.noise_sd;
  // whole groups of W tokens with a fixed-length inner loop: token l gets the same bits whatever
  // S is (no scalar epilogue computing the last tokens differently), so prompts nest exactly
  for (int64_t l0 = 0; l0 < S; l0 += W) {
    double zl[D][W];
#pragma omp simd
    for (int k = 0; k < W; ++k) {
      double y = nsd * g[d * P + l0 + k];
      for (int j = 0; j < d; ++j) {
        double acc = 0.0;
        for (int m = 0; m < d; ++m) acc += R[j][m] * g[m * P + l0 + k];
        zl[j][k] = acc;
        y += w[j] * acc;
      }
      zl[d][k] = y;
    }
    const int64_t nk = std::min<int64_t>(W, S - l0);
    for (int j = 0; j < D; ++j)
      for (int64_t k = 0; k < nk; ++k) z[j * S + l0 + k] = zl[j][k];
  }
}

// G[k] = (1/Ls[k]) sum_{l < Ls[k]} z_l z_l^T for ascending Ls, in one pass.  Lane sums run over
// whole blocks of V tokens from l = 0 and are never reset; at each Lk the lanes are summed and the
// tokens past the last whole block are added separately, so G[k] depends on Lk alone, not on
// which other lengths are in the list (a run trained in any group gets the same bits).
template <int D>
static void prefix_moments(const double* z, int64_t S, const int64_t* Ls, int64_t K, int64_t n,
                           int64_t i, double* G) {
  constexpr int V = 4;
  double acc[D][D][V] = {{{0.0}}};
  int64_t l = 0;  // tokens [0, l) are in the lanes
  for (int64_t k = 0; k < K; ++k) {
    const int64_t Lk = Ls[k];
    for (; l + V <= Lk; l += V) {
      for (int a = 0; a < D; ++a)
        for (int b = a; b < D; ++b)
#pragma omp simd
          for (int q = 0; q < V; ++q) acc[a][b][q] += z[a * S + l + q] * z[b * S + l + q];
    }
    double* out = G + (k * n + i) * D * D;
    for (int a = 0; a < D; ++a)
      for (int b = a; b < D; ++b) {
        double sum = 0.0;
        for (int q = 0; q < V; ++q) sum += acc[a][b][q];
        for (int64_t t = l; t < Lk; ++t) sum += z[a * S + t] * z[b * S + t];
        out[a * D + b] = out[b * D + a] = sum / static_cast<double>(Lk);
      }
  }
}

template <int D>
static void sample_all(const Law& law, int64_t n, int64_t S, double* zT, double* zq, double* yq,
                       double* w) {
#pragma omp parallel
  {
    Scratch sc;
    sc.resize(D, S);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      draw_prompt<D>(law, static_cast<uint32_t>(i), S, sc, zq + i * D, yq + i, w + i * (D - 1));
      std::memcpy(zT + i * D * S, sc.z.data(), sizeof(double) * D * S);
    }
  }
}

template <int D>
static void step_all(const Law& law, int64_t n, int64_t S, const double* U, const double* v,
                     const int64_t* Ls, int64_t R, const int64_t* Llin, int64_t K, double* zq,
                     double* yq, double* m1, double* m2, double* G) {
  const softlin::TaskFn fn = softlin::pick<softlin::LibmExp>(D, 1);  // docs/c5_* bits
#pragma omp parallel
  {
    Scratch sc;
    sc.resize(D, S);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      draw_prompt<D>(law, static_cast<uint32_t>(i), S, sc, zq + i * D, yq + i, nullptr);
      for (int64_t r = 0; r < R; ++r) {
        double* o1 = m1 + (r * n + i) * D;
        double* o2 = m2 + (r * n + i) * D;
        if (fn) {
          fn(U + r * D * D, v + r * D, sc.z.data(), zq + i * D, Ls[r], S, sc.s.data(), o1, o2);
        } else {
          softlin::generic_task(U + r * D * D, v + r * D, sc.z.data(), zq + i * D, D, 1, Ls[r], S,
                                sc.s.data(), o1, o2);
        }
      }
      if (K > 0) prefix_moments<D>(sc.z.data(), S, Llin, K, n, i, G);
    }
  }
}

// Dispatch on the token size D = d + 1 (2..9).
template <template <int> class F, typename... A>
static bool dispatch(int64_t D, A... args) {
  switch (D) {
    case 2: F<2>::run(args...); return true;
    case 3: F<3>::run(args...); return true;
    case 4: F<4>::run(args...); return true;
    case 5: F<5>::run(args...); return true;
    case 6: F<6>::run(args...); return true;
    case 7: F<7>::run(args...); return true;
    case 8: F<8>::run(args...); return true;
    case 9: F<9>::run(args...); return true;
    default: return false;
  }
}
template <int D>
struct SampleF {
  static void run(const Law* law, int64_t n, int64_t S, double* zT, double* zq, double* yq, double* w) {
    sample_all<D>(*law, n, S, zT, zq, yq, w);
  }
};
template <int D>
struct StepF {
  static void run(const Law* law, int64_t n, int64_t S, const double* U, const double* v,
                  const int64_t* Ls, int64_t R, const int64_t* Llin, int64_t K, double* zq,
                  double* yq, double* m1, double* m2, double* G) {
    step_all<D>(*law, n, S, U, v, Ls, R, Llin, K, zq, yq, m1, m2, G);
  }
};

// key (2,) u32 = (seed, stream); cfg (2,) s64 = (step, float64 normals?); scales (2,) = (w_sd,
// noise_sd); roots (2, d, d) = (R_p, R_q).
static ffi::Error read_law(ffi::Buffer<ffi::U32>& key, ffi::Buffer<ffi::S64>& cfg,
                           ffi::Buffer<ffi::F64>& scales, ffi::Buffer<ffi::F64>& roots, Law* law,
                           int64_t* d) {
  const auto rd = roots.dimensions();
  if (key.element_count() != 2 || cfg.element_count() != 2 || scales.element_count() != 2)
    return ffi::Error::InvalidArgument("online batch: key, cfg and scales must have 2 entries");
  if (rd.size() != 3 || rd[0] != 2 || rd[1] != rd[2] || rd[1] < 1 || rd[1] > 8)
    return ffi::Error::InvalidArgument("online batch: roots must be (2, d, d) with 1 <= d <= 8");
  const int64_t step = cfg.typed_data()[0];
  if (step < 0 || step > 0xFFFFFFFFll)
    return ffi::Error::InvalidArgument("online batch: step outside [0, 2^32)");
  *d = rd[1];
  law->Rp = roots.typed_data();
  law->Rq = roots.typed_data() + rd[1] * rd[1];
  law->w_sd = scales.typed_data()[0];
  law->noise_sd = scales.typed_data()[1];
  law->k0 = key.typed_data()[0];
  law->k1 = key.typed_data()[1];
  law->step = static_cast<uint32_t>(step);
  law->f64 = cfg.typed_data()[1] != 0;
  return ffi::Error::Success();
}

static ffi::Error OnlineSampleImpl(ffi::Buffer<ffi::U32> key, ffi::Buffer<ffi::S64> cfg,
                                   ffi::Buffer<ffi::F64> scales, ffi::Buffer<ffi::F64> roots,
                                   ffi::ResultBuffer<ffi::F64> zT, ffi::ResultBuffer<ffi::F64> zq,
                                   ffi::ResultBuffer<ffi::F64> yq, ffi::ResultBuffer<ffi::F64> w) {
  Law law;
  int64_t d;
  ffi::Error err = read_law(key, cfg, scales, roots, &law, &d);
  if (err.failure()) return err;
  const auto zd = zT->dimensions();
  if (zd.size() != 3 || zd[1] != d + 1 || zd[2] < 1)
    return ffi::Error::InvalidArgument("online sample: zT must be (n, d + 1, L)");
  const int64_t n = zd[0];
  if (n > 0xFFFFFFFFll) return ffi::Error::InvalidArgument("online sample: too many prompts");
  dispatch<SampleF>(d + 1, static_cast<const Law*>(&law), n, static_cast<int64_t>(zd[2]),
                    zT->typed_data(), zq->typed_data(), yq->typed_data(), w->typed_data());
  return ffi::Error::Success();
}

static ffi::Error OnlineStepImpl(ffi::Buffer<ffi::U32> key, ffi::Buffer<ffi::S64> cfg,
                                 ffi::Buffer<ffi::F64> scales, ffi::Buffer<ffi::F64> roots,
                                 ffi::Buffer<ffi::F64> U, ffi::Buffer<ffi::F64> v,
                                 ffi::Buffer<ffi::S64> Ls, ffi::Buffer<ffi::S64> Llin,
                                 ffi::ResultBuffer<ffi::F64> zq, ffi::ResultBuffer<ffi::F64> yq,
                                 ffi::ResultBuffer<ffi::F64> m1, ffi::ResultBuffer<ffi::F64> m2,
                                 ffi::ResultBuffer<ffi::F64> G) {
  Law law;
  int64_t d;
  ffi::Error err = read_law(key, cfg, scales, roots, &law, &d);
  if (err.failure()) return err;
  const int64_t D = d + 1;
  const int64_t R = Ls.element_count(), K = Llin.element_count();
  const auto qd = zq->dimensions();
  if (qd.size() != 2 || qd[1] != D) return ffi::Error::InvalidArgument("online step: zq must be (n, D)");
  const int64_t n = qd[0];
  const auto ud = U.dimensions(), vd = v.dimensions();
  if (ud.size() != 3 || ud[0] != R || ud[1] != D || ud[2] != D || vd.size() != 2 || vd[0] != R ||
      vd[1] != D)
    return ffi::Error::InvalidArgument("online step: U must be (R, D, D) and v (R, D), R = len(Ls)");
  const int64_t* Lp = Ls.typed_data();
  const int64_t* Kp = Llin.typed_data();
  int64_t S = 0;
  for (int64_t r = 0; r < R; ++r) {
    if (Lp[r] < 1) return ffi::Error::InvalidArgument("online step: prompt lengths must be >= 1");
    S = std::max(S, Lp[r]);
  }
  for (int64_t k = 0; k < K; ++k) {
    if (Kp[k] < 1 || (k > 0 && Kp[k] <= Kp[k - 1]))
      return ffi::Error::InvalidArgument("online step: linear lengths must be >= 1 and ascending");
    S = std::max(S, Kp[k]);
  }
  if (S == 0) return ffi::Error::InvalidArgument("online step: no run");
  dispatch<StepF>(D, static_cast<const Law*>(&law), n, S, static_cast<const double*>(U.typed_data()),
                  static_cast<const double*>(v.typed_data()), Lp, R, Kp, K, zq->typed_data(),
                  yq->typed_data(), m1->typed_data(), m2->typed_data(), G->typed_data());
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(OnlineSample, OnlineSampleImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::S64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(OnlineStep, OnlineStepImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::S64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::S64>>()
                                  .Arg<ffi::Buffer<ffi::S64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>());
