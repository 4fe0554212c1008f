from xcbench.store.rundir import DEFAULT_STORE, default_store

"""Subcommands of the xcbench CLI, one module each."""

# One meaning per flag across commands: --store is the result store (run directories), --out an
# output file.


def add_store_arg(p, what: str = "result store directory") -> None:
    """``--store DIR`` (default $XCBENCH_STORE, else ./results)."""
    p.add_argument("--store", metavar="DIR", default=None,
                   help=f"{what} (default: $XCBENCH_STORE or ./{DEFAULT_STORE})")


def store_of(args):
    """The result store the command line names (--store, else the default)."""
    return args.store if args.store is not None else default_store()
