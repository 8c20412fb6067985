"""LEKA — Layered Edge Kernel Agent, and EdgeKernelBench, over Apache TVM 0.27.

Data flow: task (leka.tasks) -> layered IR (leka.ir) -> compiler interface (leka.compiler)
-> evaluator (leka.evaluator, isolated workers + leka.runners) -> metrics/store (leka.bench).
"""
import os as _os

# NumPy references run in the main process beside the worker: a multi-threaded BLAS on a small edge
# workload is slower (thread start-up) and competes with the kernel being timed. Users can override.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
