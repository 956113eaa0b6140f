"""Kernel labels keep what tells kernels apart (issue 15 item 3): no counters, exact expected labels."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.analysis.kernel_names import MAX_LABEL, kernel_labels, template_arguments

WGRAD = ("void cudnn::detail::wgrad_alg0_engine<float, 128, 6, 8, 3, 3, 5, false, 512>(int, int, int, "
         "float const*, int, float*, float const*, kernel_grad_params, unsigned long long, int, float, int, int)")
WGRAD_B = WGRAD.replace("<float, 128, 6, 8, 3, 3, 5, false, 512>", "<float, 512, 6, 5, 3, 3, 3, false, 512>")
FMHA = ("void fmha::fwd_kernel<cutlass::bfloat16_t, 128, 64, true, false, cutlass::arch::Sm80, fmha::Policy<4, 2>, "
        "256>(fmha::Params)")
COUNTER = re.compile(r" #\d+$")


def test_template_arguments_are_the_functions_own_without_namespaces() -> None:
    assert template_arguments(WGRAD) == ["float", "128", "6", "8", "3", "3", "5", "false", "512"]
    assert template_arguments(FMHA) == ["bfloat16_t", "128", "64", "true", "false", "Sm80", "Policy<4, 2>", "256"]
    assert template_arguments("void foo::bar(int)") == []


def test_numeric_template_arguments_tell_kernels_apart_without_counters() -> None:
    labels = kernel_labels([WGRAD, WGRAD_B])
    assert labels == {WGRAD: "wgrad_alg0_engine‹…, 128, …, 8, …, 5, …›",
                      WGRAD_B: "wgrad_alg0_engine‹…, 512, …, 5, …, 3, …›"}


def test_long_argument_lists_elide_the_common_arguments() -> None:
    other = FMHA.replace("128, 64,", "128, 32,")
    third = other.replace("Policy<4, 2>", "Policy<8, 2>")
    labels = kernel_labels([FMHA, other, third])
    assert labels == {FMHA: "fwd_kernel‹…, 64, …, Policy<4, 2>, …›",
                      other: "fwd_kernel‹…, 32, …, Policy<4, 2>, …›",
                      third: "fwd_kernel‹…, 32, …, Policy<8, 2>, …›"}


def test_names_alike_in_every_hint_fall_back_to_their_differing_text() -> None:
    lambda_a = "void at::native::elementwise_kernel<128, 2, f<g>(h)::{lambda(int)#1}>(int, f(h)::{lambda(int)#1})"
    lambda_b = lambda_a.replace("#1", "#2")
    labels = kernel_labels([lambda_a, lambda_b])
    assert len(set(labels.values())) == 2
    assert "#1" in labels[lambda_a] and "#2" in labels[lambda_b]
    assert not any(COUNTER.search(label) for label in labels.values())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["float", "half", "bf16"]), st.integers(1, 4), st.integers(1, 600),
                          st.booleans()), min_size=2, max_size=12, unique=True))
def test_distinct_names_always_get_distinct_labels_without_counters(shapes: list[tuple]) -> None:
    names = [f"void cudnn::detail::engine<{t}, {a}, 6, {b}, {str(c).lower()}, 512>(int, {t} const*)"
             for t, a, b, c in shapes]
    labels = kernel_labels(names)
    assert len(set(labels.values())) == len(set(names))
    assert all(len(label) <= MAX_LABEL for label in labels.values())
    assert not any(COUNTER.search(label) for label in labels.values())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab<>,:() _#1", min_size=0, max_size=80), min_size=1, max_size=15))
def test_any_names_get_distinct_labels(names: list[str]) -> None:
    labels = kernel_labels(names)
    assert set(labels) == set(names)
    assert len(set(labels.values())) == len(labels)
