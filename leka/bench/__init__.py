"""EdgeKernelBench harness: results store, metrics, the run loop, validation and reports."""
