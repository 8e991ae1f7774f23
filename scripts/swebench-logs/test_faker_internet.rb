require "test/unit"

class TestFakerInternet < Test::Unit::TestCase
  def test_email
    assert_match(/@/, "a@b.c")
  end

  def test_email_with_separators
    assert_equal "a.b@c.d", "a_b@c.d"
  end

  def test_email_domain
    raise ArgumentError, "no domain"
  end

  def test_email_omitted
    omit("not on this platform")
  end

  def test_email_pending
    pend("later")
  end

  data("plain" => "x@y.z", "plus" => "x+1@y.z")
  def test_email_data(value)
    assert_match(/@/, value)
  end
end
