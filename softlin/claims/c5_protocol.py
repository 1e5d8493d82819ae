"""What the C5 figure titles and verdict header say about a run, written from its settings.

The header used to print the free text ``c5.deviation``, which kept saying "lr 1e-1 with an
8000-step warm-up" whatever the run used (the smoke preset's 120-step warm-up, an override); the
deviation is now derived from the settings the run trained with, compared with the paper's.
No heavy imports: the workflow calls this when it parses the config.
"""

from __future__ import annotations

# the paper's Sec. 6 optimisation (the authors' code; the `paper` preset), as :func:`describe` reads it
PAPER = {"optimizer": {"name": "sgd", "lr": 1e-3, "momentum": 0.0, "schedule": "constant", "warmup": 0},
         "restarts": 1, "steps": 300000}


def describe(protocol: dict, short: bool = False) -> str:
    """A C5 run's optimisation in words, from ``protocol`` (``optimizer``: the validated
    ``c5.optimizer``; ``restarts``; ``steps``): the one text that figures, captions, verdicts and
    rule messages print.  ``adam lr 0.1 (beta1 0.9, beta2 0.999, eps 1e-08), cosine decay,
    8000-step linear warm-up, best of 3 initialisations (by training loss), 40000 steps``;
    ``short`` (a figure title's first line): ``adam lr 0.1 cosine (8000-step warm-up), 40000 steps
    (best of 3 inits)``."""
    opt, restarts, steps = protocol["optimizer"], int(protocol["restarts"]), int(protocol["steps"])
    if short:
        return (f"{opt['name']} lr {float(opt['lr']):g}"
                + (f" momentum {float(opt['momentum']):g}" if opt["momentum"] else "")
                + (f" {opt['schedule']}" if opt["schedule"] != "constant" else "")
                + (f" ({int(opt['warmup'])}-step warm-up)" if opt["warmup"] else "")
                + f", {steps} steps" + (f" (best of {restarts} inits)" if restarts > 1 else ""))
    parts = [f"{opt['name']} lr {float(opt['lr']):g}"]
    if opt["name"] == "sgd" and opt["momentum"]:
        parts[0] += f" momentum {float(opt['momentum']):g}"
    if opt["name"] == "adam":
        parts[0] += f" (beta1 {float(opt['beta1']):g}, beta2 {float(opt['beta2']):g}, eps {float(opt['eps']):g})"
    parts.append("cosine decay" if opt["schedule"] == "cosine" else "constant rate")
    if opt["warmup"]:
        parts.append(f"{int(opt['warmup'])}-step linear warm-up")
    parts.append(f"best of {restarts} initialisations (by training loss)" if restarts > 1
                 else "one initialisation")
    parts.append(f"{steps} steps")
    return ", ".join(parts)


def _settings(protocol: dict) -> tuple:
    """What :func:`deviation` compares: the optimiser's name, rate, SGD momentum, schedule,
    warm-up, restarts and steps."""
    opt = protocol["optimizer"]
    return (opt["name"], float(opt["lr"]), float(opt["momentum"]) if opt["name"] == "sgd" else 0.0,
            opt["schedule"], int(opt["warmup"]), int(protocol["restarts"]), int(protocol["steps"]))


def deviation(c5: dict) -> str | None:
    """How the run's optimisation (the validated C5 section) differs from the paper's, from its
    settings; None if it does not."""
    if _settings(c5) == _settings(PAPER):
        return None
    return f"optimiser {describe(c5)} instead of the paper's {describe(PAPER)}"
