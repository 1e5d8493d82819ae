// Fused softmax-attention moments, an XLA FFI custom call for the CPU (softlin.kernels.softmax_moments).
//
// For every task t and query q, with scores s_l = (U zq)^T z_l over the L prompt tokens and
// softmax weights p_l = exp(s_l - max s) / sum exp(s - max s):
//   m1[t, q, :] = sum_l p_l z_l              (the attention output, Lemma 2.1's tilted mean)
//   m2[t, q, :] = sum_l p_l (v . z_l) z_l    (the moment the U-gradient needs)
// Inputs: U (D, D), v (D), zT (n, D, l_max) tokens stored transposed, zq (n, Q, D), and the
// prompt length L (a rank-0 int64 buffer, so one compiled program serves every L): only the
// first L tokens of each prompt are read.
// Outputs: m1, m2 (n, Q, D).  Tasks are split over OpenMP threads with a static schedule and
// every sum runs in a fixed order, so results are bitwise reproducible for a given build.
#include "moments.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
using softlin::generic_task;
using softlin::TaskFn;
using softlin::pick;

static ffi::Error SoftmaxMomentsImpl(ffi::Buffer<ffi::F64> U, ffi::Buffer<ffi::F64> v,
                                     ffi::Buffer<ffi::F64> zT, ffi::Buffer<ffi::F64> zq,
                                     ffi::Buffer<ffi::S64> prompt_len,
                                     ffi::ResultBuffer<ffi::F64> m1,
                                     ffi::ResultBuffer<ffi::F64> m2) {
  const auto zdims = zT.dimensions();
  const auto qdims = zq.dimensions();
  if (zdims.size() != 3 || qdims.size() != 3) {
    return ffi::Error::InvalidArgument("softmax_moments: zT and zq must be rank 3");
  }
  const int64_t n = zdims[0], D = zdims[1], S = zdims[2], Q = qdims[1];
  const int64_t L = prompt_len.typed_data()[0];
  if (qdims[0] != n || qdims[2] != D) {
    return ffi::Error::InvalidArgument("softmax_moments: zq must be (n, Q, D)");
  }
  const auto udims = U.dimensions();
  const auto vdims = v.dimensions();
  if (udims.size() != 2 || udims[0] != D || udims[1] != D || vdims.size() != 1 || vdims[0] != D) {
    return ffi::Error::InvalidArgument("softmax_moments: U must be (D, D) and v (D), D = zT.shape[1]");
  }
  if (L < 1 || L > S) {
    return ffi::Error::InvalidArgument("softmax_moments: prompt length outside [1, l_max]");
  }
  const double* Up = U.typed_data();
  const double* vp = v.typed_data();
  const double* zp = zT.typed_data();
  const double* qp = zq.typed_data();
  double* o1 = m1->typed_data();
  double* o2 = m2->typed_data();
  const TaskFn fn = pick<softlin::InlineExp>(D, Q);

#pragma omp parallel
  {
    std::vector<double> s(Q * L);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < n; ++t) {
      const double* z = zp + t * D * S;
      const double* x = qp + t * Q * D;
      if (fn) {
        fn(Up, vp, z, x, L, S, s.data(), o1 + t * Q * D, o2 + t * Q * D);
      } else {
        generic_task(Up, vp, z, x, D, Q, L, S, s.data(), o1 + t * Q * D, o2 + t * Q * D);
      }
    }
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(SoftmaxMoments, SoftmaxMomentsImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::S64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>());
