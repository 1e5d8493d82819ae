"""Study: C2e along several C3 seeds' linear(inf) trajectories, each read as C2e reads its own (issue 31; not
a test): per seed, slope_full with its prompt-sampling error (jackknife over blocks of training pairs x
prompt draws), the count of rises as an interval (t 1.964 at 575 df) and the step where each L's gap peaks.
Reads a finished default run's C3 tasks and trajectories.

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python bench/study_c2e_trajectories.py RESULTS SETTING SEED [SEED ...]
"""
import sys
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from softlin import records  # noqa: E402
from softlin.claims import c2e, c3  # noqa: E402
from softlin.tasks import Tasks  # noqa: E402

cfg = yaml.safe_load((Path(__file__).resolve().parents[1] / 'config' / 'config.yaml').read_text())
t = cfg['c2']['trajectory']
res, st = Path(sys.argv[1]), sys.argv[2]
N_PROMPTS = 48   # the documented study's draws per training pair (c2.trajectory.n_prompts before c2e_seeds)
for seed in map(int, sys.argv[3:]):
    tasks = Tasks.load(res / 'c3' / 'tasks' / f'{st}_s{seed}.npz')
    traj = records.load(res / 'c3' / 'trajectories' / f'{st}_s{seed}.npz', c3.runs_like(cfg['c3']))
    out = c2e.along_trajectory(traj.limit, tasks, cfg['c3']['L'], t['n_blocks'], progress=lambda s: None,
                              n_prompts=N_PROMPTS, prompt_seed=t['prompt_seed'])
    f = c2e.prompt_fit(out, 1.964, N_PROMPTS)['full']
    r, se = np.array(f['n_increases_rises']), np.array(f['n_increases_rises_se'])
    lo, hi = int(np.sum(r - 1.964 * se > 0)), int(np.sum(r + 1.964 * se > 0))
    print(f"{st} seed {seed}: slope_full {f['slope_full']:+.3f} +/- {f['slope_full_se']:.3f}; rises in [{lo}, {hi}]; "
          f"argmax steps {np.asarray(out.argmax_step.full).tolist()}", flush=True)
