"""Build hook: setuptools compiles omdp._native through cffi (native/build_native.py)."""
from setuptools import setup

setup(cffi_modules=["native/build_native.py:ffibuilder"])
