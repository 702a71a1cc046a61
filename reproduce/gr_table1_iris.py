"""G&R Table 1, Iris: VB and Laplace under four ways of choosing the kernel, 50 splits (see ``_gr_table1``)."""

from __future__ import annotations

from _gr_table1 import run


def main():
    return run("load_iris")


if __name__ == "__main__":
    main()
