"""Build hook only: setuptools compiles the cffi extension app._native from native/."""

from setuptools import setup

setup(cffi_modules=["native/build_ffi.py:ffibuilder"])
