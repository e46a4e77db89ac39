import subprocess
import sys


def test_import_cotune_does_not_import_torch():
    code = "import sys, cotune; cotune.recommend; cotune.fit_models; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_bare_import_is_light():
    code = "import sys, cotune; print(sorted(m for m in ('scipy', 'sklearn', 'pandas', 'torch', 'optuna') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_public_names_resolve():
    import cotune

    for name in cotune.__all__:
        assert getattr(cotune, name) is not None
