#[test]
fn same_name() {
    assert_eq!(alpha::add(1, 1), 2);
}

#[test]
fn integration_only() {}
