"""setuptools' ``build_py`` with the connector jar: every wheel carries ``sfclayer/jars/sfclayer.jar``,
built from the Java sources by build_support/jarbuild.py (Gradle, a JDK 17, pyspark's jars). The rest of
the project's metadata is in pyproject.toml. An editable install (``pip install -e``, the Makefile's)
leaves the jar to ``make jar``."""

import os
import shutil
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "build_support"))

import jarbuild  # noqa: E402


class BuildPyWithJar(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        jar = jarbuild.build_jar(ROOT)
        target = os.path.join(self.build_lib, "sfclayer", "jars", "sfclayer.jar")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(jar, target)


setup(cmdclass={"build_py": BuildPyWithJar})
