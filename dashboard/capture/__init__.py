"""Live capture: run a program under CUPTI and write a run (`dashboard capture -- script.py`).

`session.CaptureSession` drives a capture backend (`cupti_backend` over
`cupti-python`, or `cupti_fake` on a simulated device for tests and the demo),
`records` / `tables` turn activity records into the canonical tables
(`kernels`, `memcpy`, `runtime`, `ranges`, `stack`), `torch_hooks` and
`optimizer_hooks` record PyTorch modules, passes and steps as ranges,
`stacks` samples Python stacks, `markers` is `dashboard.mark`, `rank_merge`
joins the per-rank partials of a distributed job, and `command` is the CLI.
The session returns tables; the command writes the run.
"""
