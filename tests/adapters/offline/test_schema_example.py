"""The offline stand-in answers a typed request with JSON its schema accepts, whatever the type."""

from __future__ import annotations

import json

import jsonschema
from hypothesis import given

from adapters.offline.replies import schema_example
from application import output_schema
from application.runs.output import output_spec
from tests.application.strategies import output_types


@given(output_types)
def test_the_stand_ins_answer_to_any_typed_request_fits_the_type(output_type: object) -> None:
    schema = output_schema(output_type)
    example = schema_example(schema)
    jsonschema.validate(example, schema)
    # And the loop reads it into the type without a misfit.
    output_spec(output_type).read(json.dumps(example))
