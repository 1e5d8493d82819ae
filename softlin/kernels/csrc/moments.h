// Softmax-attention moments of one prompt, shared by the FFI kernels of softlin (header only).
//
// For one task with tokens z (D rows of stride S, the first L columns used) and queries zq (Q, D),
// scores s_l = (U zq)^T z_l and weights p_l = exp(s_l - max s) / sum exp(s - max s):
//   r1[q, :] = sum_l p_l z_l,   r2[q, :] = sum_l p_l (v . z_l) z_l.
// Every sum runs in a fixed order, so results are bitwise reproducible for a given build (under
// -ffast-math the compiler may reassociate a sum: the order is the build's, not the source's).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace softlin {

// An optimisation barrier on a vector value: in a register where one holds it (AVX-512 for 8
// doubles), else through memory.
#if defined(__AVX512F__)
#define SOFTLIN_OPAQUE(x) asm("" : "+v"(x))
#else
#define SOFTLIN_OPAQUE(x) asm("" : "+m"(x))
#endif

// exp(x) for x <= 0 (the softmax weights after the max is subtracted), lane by lane on a GCC
// vector V of doubles (I: the int64 vector of the same width): x = k ln2 + r with the integer k
// nearest x / ln2 and |r| <= ln2 / 2, exp(r) by its Taylor polynomial of degree 13 (truncation
// below 5e-18) and 2^k put into the exponent bits.  Inline, so that no call spills the
// accumulators of the caller.  exp(x) is taken as 0 below x = -708 (where it is under 4e-308).
template <class V, class I>
static inline V exp_nonpos(V x) {
  const V xc = x < -708.0 ? V{} - 708.0 : x;
  const I k = __builtin_convertvector(xc * 1.4426950408889634 - 0.5, I);  // ceil(x/ln2 - 1/2)
  const V kd = __builtin_convertvector(k, V);
  V r = xc - kd * 0x1.62e42feep-1;  // ln2 = hi + lo (fdlibm's split): k hi is exact for |k| < 2^21
  SOFTLIN_OPAQUE(r);  // keeps -ffast-math from merging the two steps into xc - k (hi + lo)
  r = r - kd * 0x1.a39ef35793c76p-33;
  V p = V{} + 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  V scale;
  const I bits = (k + 1023) << 52;
  __builtin_memcpy(&scale, &bits, sizeof(V));
  return x < -708.0 ? V{} : p * scale;
}

// The exponential of the softmax weights, a policy of `fixed_task`: `lanes` on a GCC vector V of
// doubles (I: the int64 vector of the same width), `one` on a single value (the tail).
//
// LibmExp: std::exp, lane by lane in an `omp simd` loop, which the compiler turns into one call of
// the vector math library (glibc's libmvec) per vector; around that call the accumulators of the
// caller are kept in memory.  C5's online kernel uses it: its recorded results (docs/c5_*) are
// reproducible bit for bit only with the library's exponential.  (C5's kernel had its own copy of
// this template until both shared it; its moments kept their bits at D = 5, 6, C5's sizes, and
// changed in the last bits at D = 3, 4, where GCC 12 had summed the copy's lanes in another order.)
struct LibmExp {
  template <class V, class I>
  static inline V lanes(V x) {
    constexpr int W = sizeof(V) / sizeof(double);
    double in[W], out[W];
    __builtin_memcpy(in, &x, sizeof(V));
#pragma omp simd
    for (int k = 0; k < W; ++k) out[k] = std::exp(in[k]);
    V r;
    __builtin_memcpy(&r, out, sizeof(V));
    return r;
  }
  static inline double one(double x) { return std::exp(x); }
};

// InlineExp: `exp_nonpos` (within 1 ulp of std::exp), inline: without a call in the loop the
// 1 + 2D accumulators of every query stay in vector registers, and pass 2 runs at about twice the
// speed on an AVX-512 core (bench/bench_kernels.py).  The softmax_moments custom call (C1-C4)
// uses it; the tail takes lane 0 of a 2-lane vector.
struct InlineExp {
  template <class V, class I>
  static inline V lanes(V x) { return exp_nonpos<V, I>(x); }
  static inline double one(double x) {
    typedef double vec2 __attribute__((vector_size(2 * sizeof(double))));
    typedef int64_t ivec2 __attribute__((vector_size(2 * sizeof(int64_t))));
    return exp_nonpos<vec2, ivec2>(vec2{x, 0.0})[0];
  }
};

// One task: two passes over its prompt.  Pass 1 computes the scores of all Q queries (kept in
// `s`, Q x L) and their maxima; pass 2 exponentiates (the policy Exp, above) and accumulates the
// 1 + 2D moments of every query while each token is in registers (W lanes at a time).  D and Q
// are template parameters; `generic_task` handles any other size.
template <int D, int Q, class Exp, int W = 8>
static void fixed_task(const double* U, const double* v, const double* z, const double* zq,
                       int64_t L, int64_t S, double* s, double* r1, double* r2) {
  typedef double vec __attribute__((vector_size(W * sizeof(double))));
  typedef int64_t ivec __attribute__((vector_size(W * sizeof(int64_t))));
  double a[Q][D], mx[Q];
  for (int q = 0; q < Q; ++q) {
    for (int j = 0; j < D; ++j) {
      double acc = 0.0;
      for (int i = 0; i < D; ++i) acc += U[j * D + i] * zq[q * D + i];
      a[q][j] = acc;
    }
  }
  const int64_t Lw = L - L % W;
  // pass 1: scores and their maxima, W lanes at a time, then the tail
  vec m[Q], zj[D];
#pragma GCC unroll 16
  for (int q = 0; q < Q; ++q) m[q] = vec{} - std::numeric_limits<double>::infinity();
  for (int64_t l0 = 0; l0 < Lw; l0 += W) {
#pragma GCC unroll 16
    for (int j = 0; j < D; ++j) __builtin_memcpy(&zj[j], z + j * S + l0, sizeof(vec));
#pragma GCC unroll 16
    for (int q = 0; q < Q; ++q) {
      vec sc = a[q][0] * zj[0];
#pragma GCC unroll 16
      for (int j = 1; j < D; ++j) sc += a[q][j] * zj[j];
      __builtin_memcpy(s + q * L + l0, &sc, sizeof(vec));
      m[q] = sc > m[q] ? sc : m[q];
    }
  }
  for (int q = 0; q < Q; ++q) {
    double mm = m[q][0];
    for (int k = 1; k < W; ++k) mm = std::max(mm, m[q][k]);
    for (int64_t l = Lw; l < L; ++l) {
      double acc = a[q][0] * z[l];
      for (int j = 1; j < D; ++j) acc += a[q][j] * z[j * S + l];
      s[q * L + l] = acc;
      mm = std::max(mm, acc);
    }
    mx[q] = mm;
  }
  // pass 2: weights and the 1 + 2D moments of every query
  vec A0[Q], A1[Q][D], A2[Q][D];
#pragma GCC unroll 16
  for (int q = 0; q < Q; ++q) {
    A0[q] = vec{};
#pragma GCC unroll 16
    for (int j = 0; j < D; ++j) A1[q][j] = A2[q][j] = vec{};
  }
  for (int64_t l0 = 0; l0 < Lw; l0 += W) {
#pragma GCC unroll 16
    for (int j = 0; j < D; ++j) __builtin_memcpy(&zj[j], z + j * S + l0, sizeof(vec));
    vec vz = v[0] * zj[0];
#pragma GCC unroll 16
    for (int j = 1; j < D; ++j) vz += v[j] * zj[j];
#pragma GCC unroll 16
    for (int q = 0; q < Q; ++q) {
      vec sc;
      __builtin_memcpy(&sc, s + q * L + l0, sizeof(vec));
      const vec e = Exp::template lanes<vec, ivec>(sc - mx[q]);
      const vec ev = e * vz;
      A0[q] += e;
#pragma GCC unroll 16
      for (int j = 0; j < D; ++j) {
        A1[q][j] += e * zj[j];
        A2[q][j] += ev * zj[j];
      }
    }
  }
  // lane sums in a fixed order, then the tail one token at a time
  for (int q = 0; q < Q; ++q) {
    double s0 = 0.0, m1[D] = {0.0}, m2[D] = {0.0};
    for (int k = 0; k < W; ++k) {
      s0 += A0[q][k];
      for (int j = 0; j < D; ++j) {
        m1[j] += A1[q][j][k];
        m2[j] += A2[q][j][k];
      }
    }
    for (int64_t l = Lw; l < L; ++l) {
      double vz = v[0] * z[l];
      for (int j = 1; j < D; ++j) vz += v[j] * z[j * S + l];
      const double e = Exp::one(s[q * L + l] - mx[q]);
      s0 += e;
      for (int j = 0; j < D; ++j) {
        m1[j] += e * z[j * S + l];
        m2[j] += e * vz * z[j * S + l];
      }
    }
    const double inv = 1.0 / s0;
    for (int j = 0; j < D; ++j) {
      r1[q * D + j] = m1[j] * inv;
      r2[q * D + j] = m2[j] * inv;
    }
  }
}

static void generic_task(const double* U, const double* v, const double* z, const double* zq,
                         int64_t D, int64_t Q, int64_t L, int64_t S, double* s, double* r1,
                         double* r2) {
  std::vector<double> a(D), m1(D), m2(D);
  for (int64_t q = 0; q < Q; ++q) {
    for (int64_t j = 0; j < D; ++j) {
      double acc = 0.0;
      for (int64_t i = 0; i < D; ++i) acc += U[j * D + i] * zq[q * D + i];
      a[j] = acc;
    }
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t l = 0; l < L; ++l) {
      double acc = 0.0;
      for (int64_t j = 0; j < D; ++j) acc += a[j] * z[j * S + l];
      s[l] = acc;
      mx = std::max(mx, acc);
    }
    double s0 = 0.0;
    std::fill(m1.begin(), m1.end(), 0.0);
    std::fill(m2.begin(), m2.end(), 0.0);
    for (int64_t l = 0; l < L; ++l) {
      double vz = 0.0;
      for (int64_t j = 0; j < D; ++j) vz += v[j] * z[j * S + l];
      const double e = std::exp(s[l] - mx);
      s0 += e;
      for (int64_t j = 0; j < D; ++j) {
        m1[j] += e * z[j * S + l];
        m2[j] += e * vz * z[j * S + l];
      }
    }
    for (int64_t j = 0; j < D; ++j) {
      r1[q * D + j] = m1[j] / s0;
      r2[q * D + j] = m2[j] / s0;
    }
  }
}

using TaskFn = void (*)(const double*, const double*, const double*, const double*, int64_t,
                        int64_t, double*, double*, double*);

template <int D, class Exp>
static TaskFn pick_q(int64_t Q) {
  switch (Q) {
    case 1: return fixed_task<D, 1, Exp>;
    case 2: return fixed_task<D, 2, Exp>;
    case 4: return fixed_task<D, 4, Exp>;
    default: return nullptr;
  }
}

// The template instance for (D, Q) with the exponential `Exp` (InlineExp or LibmExp), or nullptr
// (then `generic_task`).
template <class Exp>
static TaskFn pick(int64_t D, int64_t Q) {
  switch (D) {
    case 3: return pick_q<3, Exp>(Q);
    case 4: return pick_q<4, Exp>(Q);
    case 5: return pick_q<5, Exp>(Q);
    case 6: return pick_q<6, Exp>(Q);
    default: return nullptr;
  }
}

}  // namespace softlin
