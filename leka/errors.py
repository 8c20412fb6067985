"""User-facing errors: the CLI prints ``str(err)`` as one line and exits non-zero, no traceback."""


class LekaError(Exception):
    """Bad input or an unusable request (unknown target/task, malformed file ...)."""

    exit_code = 2


class UnknownTargetError(LekaError):
    pass


class UnknownTaskError(LekaError):
    pass


class CandidateFormatError(LekaError):
    """The candidate file is not TVMScript, or its signature does not match the task."""


class NotRunnableError(LekaError):
    """The target builds here but needs other hardware (a board, a GPU) to run."""

    exit_code = 3
