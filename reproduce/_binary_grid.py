"""The binary evidence study of issue 21 (item 2), shared by ``reproduce/binary_grid_<problem>.py``.

N&R's design ([NR08] §6, Figs. 4–7) on one problem: at every point of a grid over (ln ℓ, ln σ_f) of an
isotropic squared-exponential kernel (inputs standardised, jitter 1e-6, as in book/comparison_binary.ipynb),

- every method of the binary comparison fitted at fixed hyperparameters: its log evidence or bound
  (``log_marginal_likelihood_``), the test mean log predictive probability and error rate;
- the probit gold standard, the exact orthant probability (``probit_orthant_evidence``, default tolerance
  0.003 nats, rng = 0 at every point, so that neighbouring points share their quasi-random numbers);
- the logistic gold standard, AIS with its validated defaults (``ais_log_evidence``; rng = a point's index),
  at the grid points listed by the problem's script (the whole toy grid; a few points on the real sets).

Then the optima, resolved:

- each method's own optimum of its objective, by the learner's ``optimize=True`` path (L-BFGS-B through
  ``gpc_ref.hyperparameters.maximize``) started from the grid point where that objective is largest (rerun
  from σ_f = 1, ℓ = √D if that search ends below its start), with its convergence flag; the gold standard of its likelihood at that optimum (orthant for the probit
  methods, one AIS run for the logistic ones), and the test scores there. The upper bound's estimator
  keeps the lower bound's hyperparameters (G&M), so it has no optimum of its own. Beside it, under
  ``from_default``, the search of the learnt-hyperparameter chapter (book/comparison_learnt.ipynb): from
  σ_f = 1, ℓ = √D, the practical default, so that the two protocols can be compared (issue 30, item 6);
  KL runs with both likelihoods (item 4);
- the probit gold standard's optimum: a local grid of step 0.125 (5 × 5) around its best grid point,
  moved until the best local point is inside it (at most three moves);
- the logistic gold standard's optimum, where the script asks for it: AIS at the four neighbours, at
  distance ``refine_step``, of the best AIS point found.

The "gold evidence lost" by a method is the gold value at the best point found (over the grid, the refinement
and the methods' optima), estimated again with independent random numbers, minus the gold value at the
method's optimum, with the two standard errors combined. The second estimate removes the winner's curse: the
largest of several noisy values is biased upwards, and the method whose optimum supplied it would otherwise lose
exactly zero by construction (``supplied_best``; the loss from the selected value is kept as
``gold_lost_selected``).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from _shared import JITTER
from _shared import kernel_at

from gpc_ref import EPGPC
from gpc_ref import KLGPC
from gpc_ref import LaplaceGPC
from gpc_ref import VariationalBoundsGPC
from gpc_ref import VBProbitGPC
from gpc_ref.ais import ais_log_evidence
from gpc_ref.datasets import Standardizer
from gpc_ref.datasets import crabs_split
from gpc_ref.datasets import load_biopsy
from gpc_ref.datasets import load_crabs
from gpc_ref.datasets import load_digits
from gpc_ref.datasets import make_gm_toy_1d
from gpc_ref.datasets import stratified_split
from gpc_ref.exact import probit_orthant_evidence
from gpc_ref.likelihoods import LogisticLikelihood
from gpc_ref.metrics import error_rate
from gpc_ref.metrics import mean_log_predictive

# name -> (factory(kernel, optimize), likelihood): the methods of book/comparison_binary.ipynb, same options
METHODS = {
    "laplace": (lambda k, opt: LaplaceGPC(k, optimize=opt, prior=None, n_restarts=0), "logistic"),
    "laplace_probit": (lambda k, opt: LaplaceGPC(k, optimize=opt, likelihood="probit", prior=None, n_restarts=0),
                       "probit"),
    "ep": (lambda k, opt: EPGPC(k, optimize=opt), "probit"),
    "lower_bound": (lambda k, opt: VariationalBoundsGPC(k, optimize=opt, bound="lower"), "logistic"),
    "upper_bound": (lambda k, opt: VariationalBoundsGPC(k, optimize=opt, bound="upper"), "logistic"),
    "vb": (lambda k, opt: VBProbitGPC(k, optimize=opt), "probit"),
    "kl": (lambda k, opt: KLGPC(k, optimize=opt), "logistic"),
    "kl_probit": (lambda k, opt: KLGPC(k, optimize=opt, likelihood="probit"), "probit"),
}  # fmt: skip
LEARNT = [name for name in METHODS if name != "upper_bound"]  # the upper bound keeps the lower bound's kernel
REFINE_STEP = 0.125


def _standardised(X_train, X_test):
    scaler = Standardizer().fit(np.asarray(X_train, float))
    return scaler.transform(np.asarray(X_train, float)), scaler.transform(np.asarray(X_test, float))


def _problem(X_train, labels_train, X_test, labels_test, positive, split):
    X_train, X_test = _standardised(X_train, X_test)
    sign = lambda labels: np.where(np.asarray(labels) == positive, 1.0, -1.0)  # noqa: E731
    return {"X": X_train, "y": sign(labels_train), "X_test": X_test, "y_test": sign(labels_test), "split": split}


def toy_problem(n_train):
    """G&M's 1-D toy: make_gm_toy_1d(1, n_train) for training, make_gm_toy_1d(2, 1000) for testing."""
    x, t = make_gm_toy_1d(1, n_train)
    x_test, t_test = make_gm_toy_1d(2, 1000)
    return _problem(x[:, None], t, x_test[:, None], t_test, 1,
                    f"make_gm_toy_1d(1, {n_train}) for training, make_gm_toy_1d(2, 1000) for testing")  # fmt: skip


def biopsy_problem():
    """Biopsy: stratified_split(y, 0.22, 0), 151 training and 532 test cases; +1 = malignant."""
    data = load_biopsy()
    train, test = stratified_split(data.y, 0.22, 0)
    return _problem(data.X[train], data.y[train], data.X[test], data.y[test], "malignant",
                    "stratified_split(y, 0.22, 0): 151 training, 532 test; +1 = malignant")  # fmt: skip


def crabs_problem():
    """Crabs: crabs_split(0), 20 training crabs per species×sex group (80), 120 test; +1 = male."""
    data = load_crabs()
    train, test = crabs_split(0)
    return _problem(data.X[train], data.y[train], data.X[test], data.y[test], "M",
                    "crabs_split(0): 80 training (20 per species×sex group), 120 test; +1 = male")  # fmt: skip


def digits_problem():
    """Digits 3 (+1) against 5 (−1), scikit-learn's 8 × 8 images (the counterpart of K&R's USPS 3 vs 5): grey
    levels scaled to [0, 1], not standardised (several border pixels never vary), stratified_split(y, 0.5, 0):
    183 training and 182 test images."""
    data = load_digits()
    keep = np.isin(data.y, [3, 5])
    X, y = np.asarray(data.X[keep], float) / 16.0, np.where(data.y[keep] == 3, 1.0, -1.0)
    train, test = stratified_split(y, 0.5, 0)
    return {"X": X[train], "y": y[train], "X_test": X[test], "y_test": y[test],
            "split": "digits 3 (+1) vs 5 (-1), grey levels / 16, stratified_split(y, 0.5, 0): 183 train, 182 test"}  # fmt: skip


def _fit(model, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    return model, [f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught]


def _scores(model, problem):
    t = (problem["y_test"] + 1) / 2
    p = model.predict_proba(problem["X_test"])[:, 1]
    return {"mlp": float(mean_log_predictive(t, p)), "error": float(error_rate(t, (p > 0.5).astype(float)).rate)}


def probit_gold(problem, point, rng=0):
    start = time.perf_counter()
    K = kernel_at(*point).K(problem["X"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = probit_orthant_evidence(K, problem["y"], rng=rng)
    return {"log_z": float(result.log_evidence), "se": float(result.std_error), "converged": bool(result.converged),
            "seconds": time.perf_counter() - start}  # fmt: skip


def logistic_gold(problem, point, seed):
    start = time.perf_counter()
    K = kernel_at(*point).K(problem["X"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = ais_log_evidence(K, problem["y"], LogisticLikelihood(), rng=seed)
    return {"log_z": float(result.log_evidence), "se": float(result.std_error),
            "ess": float(result.effective_sample_size), "seed": int(seed),
            "seconds": time.perf_counter() - start}  # fmt: skip


def _point_key(point):
    return f"{point[0]:+.4f},{point[1]:+.4f}"


def grid_part(problem, log_ls, log_sfs, logistic_points):
    """Every method, the probit gold standard and (at ``logistic_points``) the logistic one on the grid."""
    shape = (len(log_sfs), len(log_ls))  # [ln σ_f, ln ℓ]
    methods = {name: {f: np.full(shape, np.nan) for f in ("log_z", "mlp", "error", "n_iter", "n_warnings")}
               for name in METHODS}  # fmt: skip
    probit = {f: np.full(shape, np.nan) for f in ("log_z", "se", "seconds")}
    logistic = {f: np.full(shape, np.nan) for f in ("log_z", "se", "ess", "seconds")}
    for i, log_sf in enumerate(log_sfs):
        for j, log_l in enumerate(log_ls):
            point = (float(log_l), float(log_sf))
            kernel = kernel_at(*point)
            for name, (make, _) in METHODS.items():
                model, caught = _fit(make(kernel, False), problem["X"], problem["y"])
                scores = _scores(model, problem)
                for field, value in [("log_z", model.log_marginal_likelihood_), ("mlp", scores["mlp"]),
                                     ("error", scores["error"]), ("n_iter", getattr(model, "n_iter_", 0)),
                                     ("n_warnings", len(caught))]:  # fmt: skip
                    methods[name][field][i, j] = value
            gold = probit_gold(problem, point)
            for field in probit:
                probit[field][i, j] = gold[field]
            if any(np.allclose(point, q) for q in logistic_points):
                gold = logistic_gold(problem, point, seed=i * len(log_ls) + j)
                for field in logistic:
                    logistic[field][i, j] = gold[field]
            print(f"grid ({log_l:+.2f}, {log_sf:+.2f}): orthant {probit['log_z'][i, j]:.3f} "
                  f"± {probit['se'][i, j]:.4f}, AIS logistic {logistic['log_z'][i, j]:.3f}", flush=True)  # fmt: skip
    as_lists = lambda table: {k: v.tolist() for k, v in table.items()}  # noqa: E731
    return ({name: as_lists(table) for name, table in methods.items()}, as_lists(probit), as_lists(logistic))


def _best(log_ls, log_sfs, values):
    values = np.where(np.isnan(values), -np.inf, values)
    i, j = np.unravel_index(np.argmax(values), values.shape)
    return float(log_ls[j]), float(log_sfs[i])


def _fit_summary(fit):
    """Convergence flag, projected-gradient norm and iterations of a learner's hyperparameter search.

    The learners return different result types (``MAPResult``, EP's and KL's fits, the bounds' fit, VB's
    learning trace); the ``maximize`` record (``HyperparameterFit``) sits in ``optimization`` when wrapped.
    """
    inner = getattr(fit, "optimization", fit)
    value = lambda obj, name, kind: None if getattr(obj, name, None) is None else kind(getattr(obj, name))  # noqa: E731
    converged = value(fit, "converged", bool)
    return {"converged": value(inner, "converged", bool) if converged is None else converged,
            "gradient_norm": value(inner, "gradient_norm", float), "n_iter": value(inner, "n_iter", int),
            "fit_type": type(fit).__name__}  # fmt: skip


def _learn(name, start_point, problem):
    make, likelihood = METHODS[name]
    start = time.perf_counter()
    model, caught = _fit(make(kernel_at(*start_point), True), problem["X"], problem["y"])
    theta = model.kernel_.theta  # (log σ_f², log ℓ)
    point = (float(theta[1]), float(theta[0] / 2))
    return {"likelihood": likelihood, "start": start_point, "point": point,
            "log_z": float(model.log_marginal_likelihood_), **_fit_summary(model.hyperparameter_fit_),
            "warnings": caught, "seconds": time.perf_counter() - start, **_scores(model, problem)}  # fmt: skip


def optimum_part(problem, log_ls, log_sfs, methods):
    """Each method's optimum of its own objective, by ``optimize=True`` from its best grid point.

    A search that ends below the objective's value at its own start has failed (on crabs the JJ lower bound's
    first L-BFGS step from (ln ℓ, ln σ_f) = (3, 5.5) lands on the box's corner, where the bound is n log ½ and
    its gradient vanishes); it is then rerun from the binary comparison's start (σ_f = 1, ℓ = √D), the better
    of the two is kept and the failed one recorded under ``failed_search``.
    """
    optima = {}
    default_start = (float(0.5 * np.log(problem["X"].shape[1])), 0.0)
    for name in LEARNT:
        values = np.array(methods[name]["log_z"])
        start_point = _best(log_ls, log_sfs, values)
        row = _learn(name, start_point, problem)
        if row["log_z"] < np.nanmax(values) - 1e-6:
            retry = _learn(name, default_start, problem)
            failed, row = (row, retry) if retry["log_z"] > row["log_z"] else (retry, row)
            row["failed_search"] = {k: failed[k] for k in ("start", "point", "log_z", "converged")}
        # the learnt-hyperparameter chapter's protocol, from the practical default start (issue 30, item 6)
        row["from_default"] = {k: v for k, v in _learn(name, default_start, problem).items()
                               if k in ("start", "point", "log_z", "converged", "warnings", "seconds")}  # fmt: skip
        optima[name] = row
        print(f"optimum {name}: ({row['point'][0]:+.3f}, {row['point'][1]:+.3f}) log Z {row['log_z']:.3f} "
              f"converged {row['converged']}", flush=True)  # fmt: skip
    return optima


def probit_refinement(problem, log_ls, log_sfs, probit_grid):
    """The orthant evidence on 5 × 5 local grids of step 0.125 around its best point, moved until inside."""
    centre = _best(log_ls, log_sfs, np.array(probit_grid["log_z"]))
    evaluated = {}
    for _ in range(4):
        offsets = REFINE_STEP * np.arange(-2, 3)
        for d_sf in offsets:
            for d_l in offsets:
                point = (centre[0] + float(d_l), centre[1] + float(d_sf))
                if _point_key(point) not in evaluated:
                    evaluated[_point_key(point)] = {"point": point, **probit_gold(problem, point)}
        best = max(evaluated.values(), key=lambda row: row["log_z"])
        inside = all(abs(best["point"][k] - centre[k]) < 2 * REFINE_STEP - 1e-9 for k in range(2))
        if inside:
            break
        centre = best["point"]
    print(f"probit gold optimum: {best['point']} log Z {best['log_z']:.4f} ± {best['se']:.4f}", flush=True)
    return {"points": list(evaluated.values()), "best": best, "step": REFINE_STEP, "inside": bool(inside)}


def study(problem, log_ls, log_sfs, logistic_points=(), refine_logistic=None, seed_offset=10_000):
    """The whole study on one problem; returns a JSON-able dict (see the module docstring).

    ``logistic_points``: grid points (ln ℓ, ln σ_f) where AIS estimates the logistic evidence.
    ``refine_logistic``: None, or the step of the four-neighbour AIS refinement around the best AIS point.
    AIS off the grid uses rng = ``seed_offset`` + its index.
    """
    start = time.perf_counter()
    log_ls, log_sfs = np.asarray(log_ls, float), np.asarray(log_sfs, float)
    methods, probit, logistic = grid_part(problem, log_ls, log_sfs, logistic_points)
    optima = optimum_part(problem, log_ls, log_sfs, methods)
    refinement = probit_refinement(problem, log_ls, log_sfs, probit)
    seed = seed_offset
    # the gold standard at each method's optimum
    for name, row in optima.items():
        if row["likelihood"] == "probit":
            row["gold"] = probit_gold(problem, row["point"])
        else:
            row["gold"] = logistic_gold(problem, row["point"], seed)
            seed += 1
        print(f"gold at {name}'s optimum: {row['gold']['log_z']:.3f} ± {row['gold']['se']:.4f}", flush=True)
    # the logistic gold standard's best point found: grid AIS and AIS at the logistic methods' optima
    logistic_found = [{"point": (float(log_ls[j]), float(log_sfs[i])), "log_z": logistic["log_z"][i][j],
                       "se": logistic["se"][i][j], "where": "grid"}
                      for i in range(len(log_sfs)) for j in range(len(log_ls)) if np.isfinite(logistic["log_z"][i][j])]  # fmt: skip
    logistic_found += [{"point": row["point"], "log_z": row["gold"]["log_z"], "se": row["gold"]["se"],
                        "where": f"{name} optimum"} for name, row in optima.items() if row["likelihood"] == "logistic"]  # fmt: skip
    if refine_logistic is not None and logistic_found:
        centre = max(logistic_found, key=lambda row: row["log_z"])["point"]
        for d_l, d_sf in [(-1, 0), (1, 0), (0, -1), (0, 1)]:
            point = (centre[0] + refine_logistic * d_l, centre[1] + refine_logistic * d_sf)
            gold = logistic_gold(problem, point, seed)
            seed += 1
            logistic_found.append({"point": point, "log_z": gold["log_z"], "se": gold["se"], "where": "refinement"})
            print(f"AIS logistic refinement {point}: {gold['log_z']:.3f} ± {gold['se']:.4f}", flush=True)
    probit_found = [{"point": r["point"], "log_z": r["log_z"], "se": r["se"], "where": "refinement"}
                    for r in refinement["points"]]  # fmt: skip
    probit_found += [{"point": row["point"], "log_z": row["gold"]["log_z"], "se": row["gold"]["se"],
                      "where": f"{name} optimum"} for name, row in optima.items() if row["likelihood"] == "probit"]  # fmt: skip
    gold_best = {"probit": max(probit_found, key=lambda row: row["log_z"])}
    if logistic_found:
        gold_best["logistic"] = max(logistic_found, key=lambda row: row["log_z"])
    # The winner's curse (issue 30, item 5): the largest of several noisy gold values is biased upwards, and a method
    # whose optimum supplied it would lose exactly 0 by construction. The best point's gold value is therefore
    # estimated again with independent random numbers, and every loss is measured from that second value.
    for lik, best in gold_best.items():
        if lik == "probit":
            again = probit_gold(problem, best["point"], rng=1)
        else:
            again = logistic_gold(problem, best["point"], seed)
            seed += 1
        best["independent"] = {"log_z": again["log_z"], "se": again["se"]}
        print(f"{lik} gold best {best['point']} ({best['where']}): {best['log_z']:.3f}, again "
              f"{again['log_z']:.3f} ± {again['se']:.4f}", flush=True)  # fmt: skip
    for name, row in optima.items():
        best = gold_best.get(row["likelihood"])
        if best is None:
            continue
        row["supplied_best"] = best["where"] == f"{name} optimum"
        row["gold_lost"] = best["independent"]["log_z"] - row["gold"]["log_z"]
        row["gold_lost_se"] = float(np.hypot(best["independent"]["se"], row["gold"]["se"]))
        row["gold_lost_selected"] = best["log_z"] - row["gold"]["log_z"]
        row["distance"] = float(np.hypot(row["point"][0] - best["point"][0], row["point"][1] - best["point"][1]))
    return {"problem": problem["split"], "n": int(len(problem["y"])), "n_test": int(len(problem["y_test"])),
            "jitter": JITTER, "log_lengthscales": log_ls.tolist(), "log_sfs": log_sfs.tolist(),
            "grid_layout": "arrays indexed [ln σ_f, ln ℓ]", "methods": methods, "probit_gold": probit,
            "logistic_gold": logistic, "logistic_points": [list(map(float, p)) for p in logistic_points],
            "optima": optima, "probit_refinement": refinement, "probit_found": probit_found,
            "logistic_found": logistic_found, "gold_best": gold_best, "refine_logistic": refine_logistic,
            "seconds": time.perf_counter() - start}  # fmt: skip
