"""LEKA — Layered Edge Kernel Agent, and EdgeKernelBench, over Apache TVM 0.27.

Data flow: task (leka.tasks) -> layered IR (leka.ir) -> compiler interface (leka.compiler)
-> evaluator (leka.evaluator, isolated workers + leka.runners) -> metrics/store (leka.bench).
"""
__version__ = "0.1.0"
