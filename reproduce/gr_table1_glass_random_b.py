"""G&R Table 1, Forensic Glass, random (unstratified) splits 25-49, at the paper's kernel choice (see ``_gr_table1``)."""

from __future__ import annotations

from _gr_table1 import run


def main():
    return run("load_glass", kernels=("is_paper",), splits=range(25, 50), stratified=False)


if __name__ == "__main__":
    main()
