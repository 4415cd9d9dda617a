"""What a search's filter pins (``filter_params``), read once for both engines: the
encoding's recognition sites and the interpreter's recognition facts."""

from graphgen.domains import load_builtin
from graphgen.verify.bmc import filter_params
from graphgen.verify.proofs import search_facts


def test_a_filtered_listing_pins_each_compared_field_to_its_parameter() -> None:
    tools = load_builtin("retail").tools
    assert filter_params(tools["find_user_orders_by_status"]) == [
        ("Order.user_id", "user_id"),
        ("Order.status", "status"),
    ]
    # a row read by key is no search: it pins nothing
    assert filter_params(tools["get_order_details"]) == []


def test_a_search_keyed_by_id_pins_like_its_list_form() -> None:
    tools = load_builtin("hr").tools
    assert filter_params(tools["list_direct_reports"]) == [("Employee.manager_id", "manager_id")]
    # compared after lower(): a row's own value may differ from the argument's case,
    # so the filter shows no value of the field
    assert filter_params(tools["find_employee_by_name"]) == []


def test_search_facts_show_the_pinned_values_only_when_rows_are_listed() -> None:
    tool = load_builtin("retail").tools["find_user_orders_by_status"]
    args = {"user_id": "U0001", "status": "pending"}
    assert search_facts(tool, args, ["O0003"]) == [
        ("Order.user_id", "U0001"),
        ("Order.status", "pending"),
    ]
    assert search_facts(tool, args, []) == []  # no row listed: nothing shown
    assert search_facts(tool, {"user_id": "U0001"}, ["O0003"]) == [("Order.user_id", "U0001")]
