require "minitest/autorun"

# Jekyll's tests are shoulda-context blocks: `context "..." do should "..." do`, which define
# methods named `test_: <context> should <what>. ` (the trailing ". " is shoulda's).
class TestSite < Minitest::Test
  define_method("test_: static files should be read. ") { assert true }
  define_method("test_: static files should keep their mtime. ") { assert_equal 1, 2 }
  define_method("test_: static files should not raise. ") { raise "boom" }
  define_method("test_: static files should be skipped later. ") { skip "later" }
  def test_plain_name
    assert true
  end
end
