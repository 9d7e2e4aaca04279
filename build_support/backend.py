"""The build backend of sfclayer: setuptools' own, with the connector jar built into every wheel.

The jar (JVM bytecode: one ``py3-none-any`` wheel serves every platform) is compiled by Gradle with a
JDK 17 against pyspark's jars, by the ``build_py`` hook of setup.py (:mod:`jarbuild`). This module adds
only what the build environment must hold for that: pyspark itself, when its jars are not given
(``$PYSPARK_JARS``, ``$SPARK_HOME/jars``) — and refuses at once, in one line naming what is missing,
where there is no JDK or Gradle (before pip fetches pyspark for nothing). The sdist needs none of them:
it carries the Java sources and build.gradle, not the jar.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from setuptools import build_meta as _setuptools  # noqa: E402
from setuptools.build_meta import *  # noqa: E402,F401,F403  (the PEP 517 hooks not redefined here)

import jarbuild  # noqa: E402

__all__ = list(_setuptools.__all__)


def _jar_requirements():
    jarbuild.check_tools()  # JDK and Gradle: SystemExit with one line when one is missing
    return [] if jarbuild.given_pyspark_jars() else [jarbuild.PYSPARK_FOR_BUILD]


def get_requires_for_build_wheel(config_settings=None):
    return _setuptools.get_requires_for_build_wheel(config_settings) + _jar_requirements()
