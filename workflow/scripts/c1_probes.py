"""C1 rule c1_probes: probe parameters of every setting, with lambda_max(M) and beta (S5)."""
from softlin.claims import c1
from softlin.io import save_json
from softlin.progress import Progress

p = snakemake.params
log = Progress(snakemake.log[0], "c1 probes")
design = c1.design(p.settings, p.probes, p.exponent)
for name, st in design.items():
    log(f"{name}: " + ", ".join(f"{pr['name']} (lambda {pr['lambda_max']:.3f}, beta {pr['beta']:.3f})"
                               for pr in st["probes"]))
save_json(snakemake.output[0], design)
