"""The application package's names, imported on first use: each one is its module's object, and the lazy table
names exactly the package's ``__all__``."""

from __future__ import annotations

import importlib

import pytest

import application


def test_every_exported_name_is_found_on_first_use_in_the_module_the_table_names() -> None:
    table: dict[str, str] = vars(application)["_MODULES"]
    assert sorted(table) == sorted(application.__all__)
    for name, module in table.items():
        assert getattr(application, name) is getattr(importlib.import_module(module), name), name


def test_a_name_the_package_does_not_export_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="'application' has no attribute 'NoSuchUseCase'"):
        application.NoSuchUseCase  # noqa: B018  # the lookup is the test
