"""What the issue-16 application drivers (knn.py, llm_layer.py) share: plan
a model's matmuls with `tcc tune-precision` on calibration data, then
compile a planned and a plain bundle."""
import os
import subprocess
import sys


def run(*args, timeout=3600):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def plan_and_compile(tcc, model_path, calibration, out, budget, target, search_seconds):
    """OUT/plan.json (and OUT/report/) from tune-precision; OUT/planned.tccb
    and OUT/plain.tccb for `target`, params kept as recipes. Exits on error."""
    plan = os.path.join(out, 'plan.json')
    rc, text, err = run(tcc, 'tune-precision', model_path, '--calibration', calibration,
                        '--error-budget', str(budget), '-o', plan,
                        '--report', os.path.join(out, 'report'),
                        '--search-seconds', str(search_seconds))
    print(text.strip())
    if rc:
        sys.exit('tune-precision failed: ' + err.strip())
    for name, extra in (('planned', ['--precision-plan', plan]), ('plain', [])):
        rc, _, err = run(tcc, 'compile', model_path, '--target', target, '--param-recipes=keep',
                         '-o', os.path.join(out, name + '.tccb'), *extra)
        if rc:
            sys.exit('compile %s failed: %s' % (name, err.strip()))
