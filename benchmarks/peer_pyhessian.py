"""Side by side with PyHessian (Yao, Gholami, Keutzer & Mahoney, "PyHessian: neural networks through the lens of the
Hessian", IEEE BigData 2020, arXiv 1912.07145): the top eigenvalue of the training-loss Hessian (PyHessian: power
iteration; rmtnet.nets.sharpness: Lanczos, ARPACK) and its trace (both Hutchinson with Rademacher probes), on the same
weights, data and loss, with the dense Hessian where the model is small enough. rmtnet's products are counted by its public
:class:`rmtnet.nets.sharpness.HessianOperator` (``products``), on which :func:`hessian_top_eigenvalues` runs Lanczos
(:func:`rmtnet.spectra.sampling.lanczos.top_eigenvalues`); PyHessian's by wrapping its ``hessian_vector_product``.

PyHessian is not a dependency of rmtnet: run this in an environment that has it (``pip install pyhessian``; 0.1 is
the release on PyPI) and rmtnet on the path. It takes a criterion ``(output, target) -> loss``; it is given
:func:`rmtnet.nets.training.loss_function` ("mse": ½·mean over samples and outputs of (f − y)², one-hot targets), the
loss :func:`rmtnet.nets.train` minimises. Everything in float64 (PyHessian draws its vectors in the default dtype).
Hessian-vector products are counted on both sides. Models: a tanh MLP 20-16-16-3 (P = 659) on 64 Gaussian inputs
with 3 classes (dense Hessian by torch.autograd.functional.hessian), and the erf and ReLU MLPs 784-128-128-128-10
(P = 134 400) of simulations/sharpness.py at initialisation on 256 MNIST-5k digits. Seeds: torch.manual_seed(0)
before each PyHessian call, seed 0 for rmtnet's start vector and probes. Prints one JSON line per model.
"""
import json
import math
import sys
import time
from importlib.metadata import version

import numpy as np
import torch

try:
    from pyhessian import hessian as PyHessian
except ImportError:
    sys.exit("PyHessian is not installed here (pip install pyhessian, in a separate environment); nothing to compare")

from rmtnet.nets import MLP, sharpness as S
from rmtnet.nets.training import loss_function
from rmtnet.spectra.sampling.lanczos import top_eigenvalues
from rmtnet.studies import sharpness as study

PH = sys.modules["pyhessian.hessian"]
COUNT = {"pyhessian": 0}


def _counting():
    """Count PyHessian's Hessian-vector products."""
    py_hvp = PH.hessian_vector_product

    def py(*args, **kwargs):
        COUNT["pyhessian"] += 1
        return py_hvp(*args, **kwargs)
    PH.hessian_vector_product = py


def _rmtnet_top(model, x, y, tol):
    """(λ_max, products, seconds) as :func:`rmtnet.nets.sharpness.hessian_top_eigenvalues` computes λ_max (Lanczos
    from seed 0's start vector on the Hessian operator), the products read off the operator."""
    t = time.perf_counter()
    H = S.HessianOperator(model, (x, y), "mse")
    value = float(top_eigenvalues(H.hvp, 1, tol=tol, seed=0, dim=H.dim)[0])
    return value, H.products, round(time.perf_counter() - t, 2)


def dense_hessian(model, x, y, loss_fn):
    names = [k for k, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]
    sizes = [p.numel() for _, p in model.named_parameters()]
    theta = torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    def L(flat):
        p = {k: t.reshape(s) for k, t, s in zip(names, torch.split(flat, sizes), shapes)}
        return loss_fn(torch.func.functional_call(model, p, (x,)), y)
    return torch.autograd.functional.hessian(L, theta).numpy()


def _timed(key, fn):
    COUNT[key] = 0
    t = time.perf_counter()
    value = fn()
    return value, COUNT[key], round(time.perf_counter() - t, 2)


def compare(name, model, x, y, n_classes, dense):
    criterion = loss_function("mse", n_classes)
    out = {"model": name, "P": sum(p.numel() for p in model.parameters()), "N": len(x)}
    for tol in (1e-3, 1e-10):
        out[f"rmtnet top, Lanczos tol {tol:g} (value, HVPs, s)"] = _rmtnet_top(model, x, y, tol)
    for max_iter, tol in ((100, 1e-3), (1000, 1e-8)):
        torch.manual_seed(0)
        h = PyHessian(model, criterion, data=(x, y), cuda=False)
        out[f"pyhessian top, power maxIter {max_iter} tol {tol:g} (value, HVPs, s)"] = _timed("pyhessian", lambda: float(
            h.eigenvalues(maxIter=max_iter, tol=tol, top_n=1)[0][0]))
    est = S.hessian_trace(model, (x, y), "mse", n_probes=100, seed=0)
    out["rmtnet trace, 100 probes (value, SE)"] = (est.value, est.standard_error)
    for max_iter, tol in ((100, 1e-3), (100, 0.0)):
        torch.manual_seed(0)
        vhv = np.array(PyHessian(model, criterion, data=(x, y), cuda=False).trace(maxIter=max_iter, tol=tol))
        out[f"pyhessian trace, maxIter {max_iter} tol {tol:g} (value, SE, probes)"] = (
            float(vhv.mean()), float(vhv.std(ddof=1) / math.sqrt(len(vhv))), len(vhv))
    if dense:
        H = dense_hessian(model, x, y, criterion)
        out["dense (top, trace)"] = (float(np.linalg.eigvalsh(H)[-1]), float(np.trace(H)))
    return out


def main():
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    _counting()
    print(json.dumps({"pyhessian": version("pyhessian"), "torch": torch.__version__}))
    g = torch.Generator().manual_seed(0)
    small = MLP([20, 16, 16, 3], activation="tanh", sigma_b=0.1, seed=0, dtype=torch.float64)
    x, y = torch.randn(64, 20, generator=g), torch.randint(0, 3, (64,), generator=g)
    print(json.dumps(compare("tanh MLP 20-16-16-3, 64 Gaussian inputs, 3 classes", small, x, y, 3, True)))
    d = study.mnist_subset(256, dtype=torch.float64)
    for act in ("erf", "relu"):
        net = MLP.from_arch(study.description(128, 4, act), seed=0, dtype=torch.float64)
        print(json.dumps(compare(f"{act} MLP 784-128-128-128-10 at init, 256 MNIST-5k digits", net, d.x_train,
                                 d.y_train, 10, False)))


if __name__ == "__main__":
    main()
