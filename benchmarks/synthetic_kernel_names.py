"""Realistic kernel names of a GPT-like training step (cuBLAS / CUTLASS GEMMs, flash attention, ATen
elementwise and reduction kernels, NCCL), for `synthetic_kernel_run`."""

from __future__ import annotations

_BF16 = "c10::BFloat16"


def _gemm(layout: str, tile: str, stage: str = "") -> str:
    return (f"sm90_xmma_gemm_bf16bf16_bf16f32_f32_{layout}_n_tilesize{tile}_warpgroupsize2x1x1"
            f"{stage}_execute_segment_k_off_kernel__5x_cublas")


def _elementwise(kind: str, functor: str, dtype: str, arity: int) -> str:
    arrays = f"at::detail::Array<char*, {arity}>"
    if kind == "vectorized":
        return (f"void at::native::vectorized_elementwise_kernel<4, {functor}<{dtype}>, {arrays} >"
                f"(int, {functor}<{dtype}>, {arrays})")
    if kind == "unrolled":
        return (f"void at::native::unrolled_elementwise_kernel<{functor}<{dtype}>, {arrays}, "
                f"TrivialOffsetCalculator<{arity - 1}, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
                f"at::native::memory::LoadWithCast<{arity - 1}>, at::native::memory::StoreWithCast<1> >"
                f"(int, {functor}<{dtype}>, {arrays}, TrivialOffsetCalculator<{arity - 1}, unsigned int>)")
    return (f"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<{functor}<{dtype}> >"
            f"(at::TensorIteratorBase&, {functor}<{dtype}> const&)::{{lambda(int)#1}}>"
            f"(int, at::native::gpu_kernel_impl_nocast<{functor}<{dtype}> >)")


# The kernels every step runs, by role.
GEMM_QKV = _gemm("tn", "128x256x64")
GEMM_OUT = _gemm("tn", "128x128x64")
GEMM_FC1 = _gemm("tn", "256x128x64", "_stage4")
GEMM_FC2 = _gemm("tn", "128x256x64", "_stage3")
GEMM_DGRAD = _gemm("nn", "128x256x64")
GEMM_WGRAD = _gemm("nt", "128x128x64")
GEMM_HEAD = _gemm("tn", "256x128x64")
GEMM_HEAD_BWD = _gemm("nt", "256x128x64", "_stage4")
FLASH_FWD = ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
             "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, "
             "false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)")
FLASH_BWD = ("void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, "
             "2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, "
             "cutlass::bfloat16_t> >, true, false, false, false, false, true, false, false>"
             "(flash::Flash_bwd_params)")
FLASH_BWD_DOT = ("void flash::flash_bwd_dot_do_o_kernel<true, Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, "
                 "false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> > >"
                 "(flash::Flash_bwd_params)")
FLASH_BWD_CONVERT = ("void flash::flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, "
                     "false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, "
                     "cutlass::bfloat16_t> > >(flash::Flash_bwd_params, int)")
LAYER_NORM = (f"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<{_BF16}, float>"
              f"(int, float, {_BF16} const*, {_BF16} const*, {_BF16} const*, float*, float*, {_BF16}*)")
LAYER_NORM_BWD = (f"void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<{_BF16}, float>"
                  f"({_BF16} const*, {_BF16} const*, float const*, float const*, {_BF16} const*, {_BF16}*, int)")
GAMMA_BETA_BWD = (f"void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<{_BF16}, float>"
                  f"(long, long, {_BF16} const*, {_BF16} const*, float const*, float const*, {_BF16}*, {_BF16}*)")
GELU = _elementwise("vectorized", "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)"
                    "::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}", _BF16, 2)
GELU_BWD = _elementwise("vectorized", "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
                        "at::native::GeluType)::{lambda(c10::BFloat16, c10::BFloat16)#2}", _BF16, 3)
ADD = _elementwise("vectorized", "at::native::CUDAFunctor_add", _BF16, 3)
EMBED = (f"void at::native::(anonymous namespace)::indexSelectLargeIndex<{_BF16}, long, unsigned int, 2, 2, -2, true>"
         f"(at::cuda::detail::TensorInfo<{_BF16}, unsigned int>, at::cuda::detail::TensorInfo<long, unsigned int>, "
         "int, int, unsigned int, unsigned int, long)")
EMBED_BWD = (f"void at::native::(anonymous namespace)::embedding_backward_feature_kernel<{_BF16}, float, long>"
             f"(long const*, {_BF16} const*, {_BF16}*, int, long, int)")
SOFTMAX = ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
           "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)")
SOFTMAX_BWD = ("void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, "
               "at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, float const*, "
               "long)")
NLL = ("void nll_loss_forward_reduce_cuda_kernel_2d<float, long>(float*, float*, float const*, long const*, "
       "float const*, bool, long, long, long, long)")
NLL_BWD = ("void nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, long const*, "
           "float const*, float const*, bool, int, int, long, long)")
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
ADAM = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
        "TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, "
        "(at::native::ADAM_MODE)1, false>, float*, double, double, double, double, double, bool, float*, "
        "float*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::"
        "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, double, double, double, double, "
        "double, bool, float*, float*)")
REDUCE_SUM = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
              "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)"
              "#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
              "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)"
              "#1}>, unsigned int, float, 4>)")

_TAIL_FUNCTORS = (
    "at::native::CUDAFunctor_add", "at::native::MulFunctor", "at::native::DivFunctor", "at::native::FillFunctor",
    "at::native::AbsFunctor", "at::native::CompareEqFunctor", "at::native::sqrt_kernel_cuda_functor",
    "at::native::neg_kernel_cuda_functor", "at::native::sigmoid_kernel_cuda_functor",
    "at::native::silu_kernel_functor", "at::native::tanh_kernel_cuda_functor", "at::native::exp_kernel_cuda_functor",
    "at::native::where_kernel_impl_functor", "at::native::clamp_scalar_functor",
    "at::native::direct_copy_kernel_cuda_functor", "at::native::bitwise_not_kernel_functor",
    "at::native::reciprocal_kernel_cuda_functor",
)
_TAIL_DTYPES = ("float", _BF16, "c10::Half", "long")
_TAIL_KINDS = ("vectorized", "unrolled", "generic")
N_TAIL_NAMES = 170


def tail_kernel_names(count: int = N_TAIL_NAMES) -> list[str]:
    """Elementwise kernels that appear now and then, rarest last."""
    names = [_elementwise(kind, functor, dtype, 2 + (i % 2))
             for kind in _TAIL_KINDS for dtype in _TAIL_DTYPES for i, functor in enumerate(_TAIL_FUNCTORS)]
    return names[:count]
