"""G&R Table 1, Wine: the importance sampler for one common precision instead of 13 (see ``_gr_table1``)."""

from __future__ import annotations

from _gr_table1 import run


def main():
    return run("load_wine", kernels=("is_paper_isotropic",))


if __name__ == "__main__":
    main()
