from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def response_validator():
    import jsonschema

    from cotune.api import schema

    return jsonschema.Draft202012Validator(schema("recommend-response.v1"))


@pytest.fixture(scope="session")
def error_validator():
    import jsonschema

    from cotune.api import schema

    return jsonschema.Draft202012Validator(schema("error.v1"))
