// Softmax-attention moments of one prompt, shared by the FFI kernels of softlin (header only).
//
// For one task with tokens z (D rows of stride S, the first L columns used) and queries zq (Q, D),
// scores s_l = (U zq)^T z_l and weights p_l = exp(s_l - max s) / sum exp(s - max s):
//   r1[q, :] = sum_l p_l z_l,   r2[q, :] = sum_l p_l (v . z_l) z_l.
// Every sum runs in a fixed order, so results are bitwise reproducible for a given build.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace softlin {

// One task: two passes over its prompt.  Pass 1 computes the scores of all Q queries (kept in
// `s`, Q x L) and their maxima; pass 2 exponentiates and accumulates the 1 + 2D moments of every
// query while each token is in registers (W lanes at a time).  D and Q are template parameters
// so that the accumulators live in vector registers; `generic_task` handles any other size.
template <int D, int Q, int W = 8>
static void fixed_task(const double* U, const double* v, const double* z, const double* zq,
                       int64_t L, int64_t S, double* s, double* r1, double* r2) {
  double a[Q][D], mx[Q];
  for (int q = 0; q < Q; ++q) {
    for (int j = 0; j < D; ++j) {
      double acc = 0.0;
      for (int i = 0; i < D; ++i) acc += U[j * D + i] * zq[q * D + i];
      a[q][j] = acc;
    }
  }
  const int64_t Lw = L - L % W;
  {
    double m[Q][W];
    for (int q = 0; q < Q; ++q)
      for (int k = 0; k < W; ++k) m[q][k] = -std::numeric_limits<double>::infinity();
    for (int64_t l0 = 0; l0 < Lw; l0 += W) {
      for (int q = 0; q < Q; ++q) {
#pragma omp simd
        for (int k = 0; k < W; ++k) {
          double acc = 0.0;
          for (int j = 0; j < D; ++j) acc += a[q][j] * z[j * S + l0 + k];
          s[q * L + l0 + k] = acc;
          m[q][k] = std::max(m[q][k], acc);
        }
      }
    }
    for (int q = 0; q < Q; ++q) {
      double mm = m[q][0];
      for (int k = 1; k < W; ++k) mm = std::max(mm, m[q][k]);
      for (int64_t l = Lw; l < L; ++l) {
        double acc = 0.0;
        for (int j = 0; j < D; ++j) acc += a[q][j] * z[j * S + l];
        s[q * L + l] = acc;
        mm = std::max(mm, acc);
      }
      mx[q] = mm;
    }
  }
  double a0[Q][W] = {{0.0}}, a1[Q][D][W] = {{{0.0}}}, a2[Q][D][W] = {{{0.0}}};
  for (int64_t l0 = 0; l0 < Lw; l0 += W) {
    double vz[W];
#pragma omp simd
    for (int k = 0; k < W; ++k) {
      double acc = 0.0;
      for (int j = 0; j < D; ++j) acc += v[j] * z[j * S + l0 + k];
      vz[k] = acc;
    }
    for (int q = 0; q < Q; ++q) {
      double e[W], ev[W];
#pragma omp simd
      for (int k = 0; k < W; ++k) {
        e[k] = std::exp(s[q * L + l0 + k] - mx[q]);
        ev[k] = e[k] * vz[k];
        a0[q][k] += e[k];
      }
      for (int j = 0; j < D; ++j) {
#pragma omp simd
        for (int k = 0; k < W; ++k) {
          a1[q][j][k] += e[k] * z[j * S + l0 + k];
          a2[q][j][k] += ev[k] * z[j * S + l0 + k];
        }
      }
    }
  }
  for (int q = 0; q < Q; ++q) {
    double s0 = 0.0, m1[D] = {0.0}, m2[D] = {0.0};
    for (int k = 0; k < W; ++k) {
      s0 += a0[q][k];
      for (int j = 0; j < D; ++j) {
        m1[j] += a1[q][j][k];
        m2[j] += a2[q][j][k];
      }
    }
    for (int64_t l = Lw; l < L; ++l) {  // tail
      double vz = 0.0;
      for (int j = 0; j < D; ++j) vz += v[j] * z[j * S + l];
      const double e = std::exp(s[q * L + l] - mx[q]);
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

template <int D>
static TaskFn pick_q(int64_t Q) {
  switch (Q) {
    case 1: return fixed_task<D, 1>;
    case 2: return fixed_task<D, 2>;
    case 4: return fixed_task<D, 4>;
    default: return nullptr;
  }
}

static TaskFn pick(int64_t D, int64_t Q) {
  switch (D) {
    case 3: return pick_q<3>(Q);
    case 4: return pick_q<4>(Q);
    case 5: return pick_q<5>(Q);
    case 6: return pick_q<6>(Q);
    default: return nullptr;
  }
}

}  // namespace softlin
