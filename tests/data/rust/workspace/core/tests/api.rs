#[test]
fn from_outside() {
    assert_eq!(wscore::double(5), 10);
}

mod nested {
    #[test]
    fn deeper() {
        assert_eq!(wscore::double(0), 0);
    }
}
