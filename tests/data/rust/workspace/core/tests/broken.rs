#[test]
fn uses_what_is_not_there() {
    assert_eq!(wscore::triple(1), 3);
}
