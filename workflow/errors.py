"""The one exception type the preprocessing CLIs turn into a clean ``error: ...`` message."""


class UserError(Exception):
    """Bad input, a failed check or an unusable destination.

    The message is meant for the user: it names the files, line numbers and values involved. The CLIs
    print it without a traceback and exit with status 2.
    """
