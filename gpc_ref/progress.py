"""Progress bars for long runs (HMC, Gibbs, EM loops, restarts), made quiet by default.

tqdm is an optional dependency: it is imported only when a progress bar is asked for, and
its absence then gives an error that names the missing package. Setting the environment
variable ``TQDM_DISABLE=1`` (as the Makefile does) silences every bar without changing code.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Iterator

__all__ = ["with_progress"]


def with_progress(iterable: Iterable, progress: bool, description: str) -> Iterable | Iterator:
    """Return ``iterable`` itself, or wrapped in a tqdm progress bar when ``progress`` is True.

    Parameters
    ----------
    iterable : iterable
        What the loop runs over (e.g. ``range(n_iter)``).
    progress : bool
        Show a bar.
    description : str
        The bar's label.

    Returns
    -------
    iterable
        ``iterable`` unchanged, or a ``tqdm`` object iterating over it.
    """
    if not progress:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("progress=True needs the optional package tqdm (pip install tqdm)") from exc
    return tqdm(iterable, desc=description)
