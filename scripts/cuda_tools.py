"""Where the CUDA binary tools are: the PATH, next to nvcc, or the .venv's nvidia-cuda-cuobjdump
and nvidia-cuda-nvdisasm packages (scripts/setup-python installs them where nvcc is found: a
toolkit installed without them, as on this project's CI machine, still gets the static SASS
checks). cuobjdump -sass needs nvdisasm on its PATH: tool_env() gives it."""
import glob
import os
import shutil


def candidates(nvcc, source_dir):
    dirs = []
    if nvcc:
        dirs.append(os.path.dirname(os.path.realpath(nvcc)))
    for venv in (os.path.join(source_dir, ".venv"), os.environ.get("VIRTUAL_ENV", "")):
        if venv:
            dirs += glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "nvidia",
                                           "*", "bin"))
    return dirs


def find_tool(name, nvcc=None, source_dir="."):
    found = shutil.which(name)
    if found:
        return found
    for d in candidates(nvcc, source_dir):
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def tool_env(nvcc=None, source_dir="."):
    """The environment with every candidate folder on PATH (cuobjdump runs nvdisasm)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([env.get("PATH", "")] + candidates(nvcc, source_dir))
    return env
