"""What the C5 figure titles and verdict header say about a run, written from its settings.

The header used to print the free text ``c5.deviation``, which kept saying "lr 1e-1 with an
8000-step warm-up" whatever the run used (the smoke preset's 120-step warm-up, an override); the
deviation is now derived from the settings the run trained with, compared with the paper's.
No heavy imports: the workflow calls this when it parses the config.
"""

from __future__ import annotations

# the paper's Sec. 6 optimisation (the authors' code; the `paper` preset)
PAPER = {"name": "sgd", "lr": 1e-3, "momentum": 0.0, "schedule": "constant", "warmup": 0,
         "restarts": 1, "steps": 300000}


def describe_optimizer(opt: dict, restarts: int = 1, steps: int | None = None) -> str:
    """``adam lr 0.1, cosine decay, 8000-step warm-up, best of 3 initialisations, 40000 steps``."""
    parts = [f"{opt['name']} lr {float(opt['lr']):g}"]
    if opt["name"] == "sgd" and opt.get("momentum"):
        parts[0] += f" momentum {float(opt['momentum']):g}"
    if opt["name"] == "adam":
        parts[0] += (f" (beta1 {float(opt.get('beta1', 0.9)):g}, beta2 {float(opt.get('beta2', 0.999)):g}, "
                     f"eps {float(opt.get('eps', 1e-8)):g})")
    parts.append("cosine decay" if opt.get("schedule", "constant") == "cosine" else "constant rate")
    if opt.get("warmup"):
        parts.append(f"{int(opt['warmup'])}-step linear warm-up")
    parts.append(f"best of {restarts} initialisations (by training loss)" if restarts > 1
                 else "one initialisation")
    if steps is not None:
        parts.append(f"{int(steps)} steps")
    return ", ".join(parts)


def deviation(c5: dict) -> str | None:
    """How the run's optimisation differs from the paper's, from its settings; None if it does not."""
    opt = c5["optimizer"]
    run = {"name": opt["name"], "lr": float(opt["lr"]),
           "momentum": float(opt.get("momentum", 0.0)) if opt["name"] == "sgd" else 0.0,
           "schedule": opt.get("schedule", "constant"), "warmup": int(opt.get("warmup", 0)),
           "restarts": int(c5.get("restarts", 1)), "steps": int(c5["steps"])}
    if run == PAPER:
        return None
    return (f"optimiser {describe_optimizer(opt, run['restarts'], run['steps'])} instead of the paper's "
            f"{describe_optimizer(PAPER, PAPER['restarts'], PAPER['steps'])}")
