"""The ``timefoil`` command as a process: Ctrl-C at any moment ends it with exit status 130 and
one line, never a traceback.

Nothing is imported before the handler is in place, not even ``signal`` (which brings in enum
and functools, some thousandths of a second) or ``__future__``: only ``os`` and ``sys``, which
the interpreter has loaded before any line of timefoil runs. The commands bring in numpy and the
benchmarks, which takes most of a second, and an interrupt during those imports is as much the
user's Ctrl-C as one during a run. (``timefoil`` and ``timefoil.cli`` import nothing when they
load, so ``python -m timefoil.cli`` reaches this handler at once too.) Once the command has
ended, a Ctrl-C while the interpreter shuts down says the same line and exits 130 too."""
import os
import sys

INTERRUPTED = 130  # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C
SAID = ("timefoil: interrupted (Ctrl-C); a run keeps every answer it recorded and resumes from there "
        "when the same command is run again")


class Interrupted(BaseException):
    """Ctrl-C inside a command, carried past click (whose own handling says "Aborted!" and
    exits 1) to ``run``. Not an Exception, so no ``except Exception`` on the way stops it."""


_seen: list[int] = []  # the Ctrl-Cs this process received while its command ran


def _interrupt(signum, frame) -> None:
    """Python's own handler (KeyboardInterrupt), remembering that it ran: a KeyboardInterrupt
    swallowed on its way (a bare ``except:`` around an import in a library) would otherwise let
    the command end as if no Ctrl-C had come."""
    _seen.append(signum)
    raise KeyboardInterrupt


def _said_and_ended(*_) -> None:
    """The line (what was printed before it kept), then the process ends at once: a Ctrl-C once
    the command has ended, while the interpreter shuts down, or one Python could not raise."""
    try:
        sys.stdout.flush()
        sys.stderr.write(SAID + "\n")
        sys.stderr.flush()
    finally:
        os._exit(INTERRUPTED)


def _unraisable(unraisable) -> None:
    """A Ctrl-C that lands where Python can only print it ("Exception ignored in" a weakref
    callback of the import system, a ``__del__``) would be lost and the command go on to exit 0:
    it ends the process, with the line."""
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        _said_and_ended()
    sys.__unraisablehook__(unraisable)


def run() -> None:
    own = False
    try:
        try:
            # _signal is the interpreter's own, loaded before any line of timefoil runs (signal
            # would import enum first). A process started with Ctrl-C ignored (a background job)
            # keeps ignoring it.
            import _signal

            own = _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler
            if own:
                _signal.signal(_signal.SIGINT, _interrupt)
            sys.unraisablehook = _unraisable
            from . import main  # the commands, and through them everything they import

            main()
        finally:
            if own:
                _signal.signal(_signal.SIGINT, _said_and_ended)
    except (KeyboardInterrupt, Interrupted):
        _interrupted()
    except BaseException:
        # the command ended although a Ctrl-C came: its KeyboardInterrupt was swallowed on its way,
        # or became another error (Python 3.11 turns one raised in a class's __set_name__, as a
        # module is imported, into a RuntimeError)
        if _seen:
            _interrupted()
        raise


def caused_by_ctrl_c(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by, or while handling, a Ctrl-C."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, (KeyboardInterrupt, Interrupted)):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _interrupted() -> None:
    import _signal

    # a second Ctrl-C while this one is being said ends the process at once, still quietly
    _signal.signal(_signal.SIGINT, lambda *_: os._exit(INTERRUPTED))
    print(SAID, file=sys.stderr)
    # An interrupt inside exec() of a string (dataclasses make their methods so, on import)
    # leaves CPython's "unhandled KeyboardInterrupt" flag set even though it was handled
    # here, and the interpreter would then end itself by SIGINT at exit (status -2, not
    # 130). Each exec of a string starts by clearing that flag.
    exec("pass")
    sys.exit(INTERRUPTED)
