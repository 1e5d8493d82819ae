// Softmax-attention moments at every prompt length of a nested family in one pass, an XLA FFI
// custom call for the CPU (softlin.kernels.softmax_prefix).
//
// For every task t, query q and length L_k of the strictly increasing list Ls, with scores
// s_l = (U zq)^T z_l and weights p_l ∝ exp(s_l) over the first L_k tokens:
//   m1[k, t, q, :] = sum_{l < L_k} p_l z_l,   m2[k, t, q, :] = sum_{l < L_k} p_l (v . z_l) z_l,
// the moments of softmax_moments.cc at each L_k.  The prompt is read once, segment by segment
// ([L_{k-1}, L_k)): per segment the scores and their maximum (pass 1), then the running maximum
// M = max(M_prev, segment max), the running sums rescaled by exp(M_prev - M) and the segment's
// weights exp(s_l - M) added (pass 2): the usual online softmax, so a short prefix whose maximum
// lies far below the whole prompt's is normalised by its own maximum (nothing underflows).
// Inputs: U (D, D), v (D), zT (n, D, l_max) tokens stored transposed, zq (n, Q, D), Ls (n_L)
// int64.  Outputs: m1, m2 (n_L, n, Q, D); m2 may be declared empty (shape (0,)): then only m1 is
// computed (C1's outputs need no m2).  Tasks are split over OpenMP threads with a static
// schedule and every sum runs in a fixed order, so results are bitwise reproducible for a given
// build.  Sizes without a template instance (D outside 3..6 and 9, or Q not 1, 2, 4) run moments.h's
// generic_task once per length (same results up to rounding, sum_k L_k tokens read).
#include "moments.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

using softlin::InlineExp;

// One task, every length: see the header comment.  D, Q template parameters; M2: whether m2 is
// wanted (C1 reads only m1: its D accumulators of m2 per query are skipped); W lanes.
template <int D, int Q, bool M2, int W = 8>
void prefix_task(const double* U, const double* v, const double* z, const double* zq,
                 const int64_t* Ls, int64_t nL, int64_t S, int64_t out_stride, double* s,
                 double* r1, double* r2) {
  typedef double vec __attribute__((vector_size(W * sizeof(double))));
  typedef int64_t ivec __attribute__((vector_size(W * sizeof(int64_t))));
  double a[Q][D], M[Q], R0[Q], R1[Q][D], R2[Q][D];
  for (int q = 0; q < Q; ++q) {
    for (int j = 0; j < D; ++j) {
      double acc = 0.0;
      for (int i = 0; i < D; ++i) acc += U[j * D + i] * zq[q * D + i];
      a[q][j] = acc;
    }
  }
  int64_t b = 0;
  for (int64_t k = 0; k < nL; ++k) {
    const int64_t e = Ls[k], len = e - b, lw = len - len % W;
    const double* zs = z + b;
    // pass 1: the segment's scores (s, Q x len) and their maxima, W lanes at a time, then the tail
    vec m[Q], zj[D];
#pragma GCC unroll 16
    for (int q = 0; q < Q; ++q) m[q] = vec{} - std::numeric_limits<double>::infinity();
    for (int64_t l0 = 0; l0 < lw; l0 += W) {
#pragma GCC unroll 16
      for (int j = 0; j < D; ++j) __builtin_memcpy(&zj[j], zs + j * S + l0, sizeof(vec));
#pragma GCC unroll 16
      for (int q = 0; q < Q; ++q) {
        vec sc = a[q][0] * zj[0];
#pragma GCC unroll 16
        for (int j = 1; j < D; ++j) sc += a[q][j] * zj[j];
        __builtin_memcpy(s + q * len + l0, &sc, sizeof(vec));
        m[q] = sc > m[q] ? sc : m[q];
      }
    }
    double Mnew[Q], c[Q];
    for (int q = 0; q < Q; ++q) {
      double mm = m[q][0];  // the lanes' maximum, or the first tail score when no full vector
      for (int kk = 1; kk < W; ++kk) mm = std::max(mm, m[q][kk]);
      for (int64_t l = lw; l < len; ++l) {
        double acc = a[q][0] * zs[l];
        for (int j = 1; j < D; ++j) acc += a[q][j] * zs[j * S + l];
        s[q * len + l] = acc;
        mm = l == 0 && lw == 0 ? acc : std::max(mm, acc);
      }
      Mnew[q] = k == 0 ? mm : std::max(M[q], mm);
      c[q] = k == 0 ? 0.0 : InlineExp::one(M[q] - Mnew[q]);  // rescales the running sums
    }
    // pass 2: the segment's weights exp(s - Mnew) and its 1 + 2D moments of every query
    vec A0[Q], A1[Q][D], A2[Q][D];
#pragma GCC unroll 16
    for (int q = 0; q < Q; ++q) {
      A0[q] = vec{};
#pragma GCC unroll 16
      for (int j = 0; j < D; ++j) A1[q][j] = A2[q][j] = vec{};
    }
    for (int64_t l0 = 0; l0 < lw; l0 += W) {
#pragma GCC unroll 16
      for (int j = 0; j < D; ++j) __builtin_memcpy(&zj[j], zs + j * S + l0, sizeof(vec));
      vec vz = v[0] * zj[0];
#pragma GCC unroll 16
      for (int j = 1; j < D; ++j) vz += v[j] * zj[j];
#pragma GCC unroll 16
      for (int q = 0; q < Q; ++q) {
        vec sc;
        __builtin_memcpy(&sc, s + q * len + l0, sizeof(vec));
        const vec ex = InlineExp::lanes<vec, ivec>(sc - Mnew[q]);
        const vec ev = ex * vz;
        A0[q] += ex;
#pragma GCC unroll 16
        for (int j = 0; j < D; ++j) {
          A1[q][j] += ex * zj[j];
          if (M2) A2[q][j] += ev * zj[j];
        }
      }
    }
    // lane sums in a fixed order, the tail one token at a time, then running = c running + segment
    for (int q = 0; q < Q; ++q) {
      double s0 = 0.0, m1[D] = {0.0}, m2[D] = {0.0};
      for (int kk = 0; kk < W; ++kk) {
        s0 += A0[q][kk];
        for (int j = 0; j < D; ++j) {
          m1[j] += A1[q][j][kk];
          if (M2) m2[j] += A2[q][j][kk];
        }
      }
      for (int64_t l = lw; l < len; ++l) {
        double vz = v[0] * zs[l];
        for (int j = 1; j < D; ++j) vz += v[j] * zs[j * S + l];
        const double ex = InlineExp::one(s[q * len + l] - Mnew[q]);
        s0 += ex;
        for (int j = 0; j < D; ++j) {
          m1[j] += ex * zs[j * S + l];
          if (M2) m2[j] += ex * vz * zs[j * S + l];
        }
      }
      R0[q] = k == 0 ? s0 : c[q] * R0[q] + s0;
      for (int j = 0; j < D; ++j) {
        R1[q][j] = k == 0 ? m1[j] : c[q] * R1[q][j] + m1[j];
        R2[q][j] = k == 0 ? m2[j] : c[q] * R2[q][j] + m2[j];
      }
      M[q] = Mnew[q];
      const double inv = 1.0 / R0[q];
      for (int j = 0; j < D; ++j) {
        r1[k * out_stride + q * D + j] = R1[q][j] * inv;
        if (M2) r2[k * out_stride + q * D + j] = R2[q][j] * inv;
      }
    }
    b = e;
  }
}

using PrefixFn = void (*)(const double*, const double*, const double*, const double*,
                          const int64_t*, int64_t, int64_t, int64_t, double*, double*, double*);

template <int D, bool M2>
PrefixFn pick_q(int64_t Q) {
  switch (Q) {
    case 1: return prefix_task<D, 1, M2>;
    case 2: return prefix_task<D, 2, M2>;
    case 4: return prefix_task<D, 4, M2>;
    default: return nullptr;
  }
}

template <bool M2>
PrefixFn pick(int64_t D, int64_t Q) {
  switch (D) {
    case 3: return pick_q<3, M2>(Q);
    case 4: return pick_q<4, M2>(Q);
    case 5: return pick_q<5, M2>(Q);
    case 6: return pick_q<6, M2>(Q);
    case 9: return pick_q<9, M2>(Q);  // C2's task-integral tokens (x, x_i x_j) at d = 3
    default: return nullptr;
  }
}

}  // namespace

static ffi::Error SoftmaxMomentsPrefixImpl(ffi::Buffer<ffi::F64> U, ffi::Buffer<ffi::F64> v,
                                           ffi::Buffer<ffi::F64> zT, ffi::Buffer<ffi::F64> zq,
                                           ffi::Buffer<ffi::S64> lengths,
                                           ffi::ResultBuffer<ffi::F64> m1,
                                           ffi::ResultBuffer<ffi::F64> m2) {
  const auto zdims = zT.dimensions();
  const auto qdims = zq.dimensions();
  if (zdims.size() != 3 || qdims.size() != 3) {
    return ffi::Error::InvalidArgument("softmax_moments_prefix: zT and zq must be rank 3");
  }
  const int64_t n = zdims[0], D = zdims[1], S = zdims[2], Q = qdims[1];
  if (qdims[0] != n || qdims[2] != D) {
    return ffi::Error::InvalidArgument("softmax_moments_prefix: zq must be (n, Q, D)");
  }
  const auto udims = U.dimensions();
  const auto vdims = v.dimensions();
  if (udims.size() != 2 || udims[0] != D || udims[1] != D || vdims.size() != 1 || vdims[0] != D) {
    return ffi::Error::InvalidArgument(
        "softmax_moments_prefix: U must be (D, D) and v (D), D = zT.shape[1]");
  }
  const auto ldims = lengths.dimensions();
  if (ldims.size() != 1 || ldims[0] < 1) {
    return ffi::Error::InvalidArgument("softmax_moments_prefix: Ls must be a non-empty vector");
  }
  const int64_t nL = ldims[0];
  const int64_t* Ls = lengths.typed_data();
  int64_t seg = 0;
  for (int64_t k = 0; k < nL; ++k) {
    const int64_t prev = k ? Ls[k - 1] : 0;
    if (Ls[k] <= prev || Ls[k] > S) {
      return ffi::Error::InvalidArgument(
          "softmax_moments_prefix: Ls must increase strictly within [1, l_max]");
    }
    seg = std::max(seg, Ls[k] - prev);
  }
  const double* Up = U.typed_data();
  const double* vp = v.typed_data();
  const double* zp = zT.typed_data();
  const double* qp = zq.typed_data();
  double* o1 = m1->typed_data();
  double* o2 = m2->typed_data();
  // an empty m2 output: only m1 is wanted (C1)
  const bool with_m2 = m2->dimensions().size() == 4;
  if (!with_m2 && !(m2->dimensions().size() == 1 && m2->dimensions()[0] == 0)) {
    return ffi::Error::InvalidArgument("softmax_moments_prefix: m2 must be (n_L, n, Q, D) or empty");
  }
  const PrefixFn fn = with_m2 ? pick<true>(D, Q) : pick<false>(D, Q);
  const int64_t stride = n * Q * D;
  std::vector<double> sink(with_m2 ? 0 : (fn ? 0 : n * Q * D * nL));  // generic path's unwanted m2
  double* o2w = with_m2 ? o2 : sink.data();

#pragma omp parallel
  {
    std::vector<double> s(Q * (fn ? seg : Ls[nL - 1]));
#pragma omp for schedule(static)
    for (int64_t t = 0; t < n; ++t) {
      const double* z = zp + t * D * S;
      const double* x = qp + t * Q * D;
      if (fn) {
        fn(Up, vp, z, x, Ls, nL, S, stride, s.data(), o1 + t * Q * D, o2w + t * Q * D);
      } else {
        for (int64_t k = 0; k < nL; ++k) {
          softlin::generic_task(Up, vp, z, x, D, Q, Ls[k], S, s.data(),
                                o1 + k * stride + t * Q * D, o2w + k * stride + t * Q * D);
        }
      }
    }
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(SoftmaxMomentsPrefix, SoftmaxMomentsPrefixImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::S64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>());
