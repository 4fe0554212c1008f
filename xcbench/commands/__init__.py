from xcbench.store.rundir import DEFAULT_STORE, default_store

"""Subcommands of the xcbench CLI, one module each."""

# One meaning per flag across commands: --store is the result store (run directories), --out an
# output file. Commands that once took the store as --out keep that spelling as a hidden alias.


def add_store_arg(p, what: str = "result store directory") -> None:
    """``--store DIR`` (default $XCBENCH_STORE, else ./results), and the old ``--out`` for it."""
    import argparse

    p.add_argument("--store", metavar="DIR", default=None,
                   help=f"{what} (default: $XCBENCH_STORE or ./{DEFAULT_STORE})")
    p.add_argument("--out", dest="store", metavar="DIR", help=argparse.SUPPRESS)  # before 0.x: --out


def store_of(args):
    """The result store the command line names (--store, its old spelling --out, else the default)."""
    return args.store if args.store is not None else default_store()
