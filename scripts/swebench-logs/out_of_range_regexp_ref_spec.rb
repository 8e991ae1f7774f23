RSpec.describe "Lint/OutOfRangeRegexpRef" do
  it "registers an offense when $3 is used with two groups" do
    expect(2 + 1).to eq(3)
  end

  it "does not register an offense for a named group" do
    expect([1, 2].size).to eq(3)
  end

  it "is pending until named captures are counted" do
    pending "named captures"
    expect(1).to eq(2)
  end

  it "is skipped" do
    skip "later"
  end

  context "inside a block" do
    it "registers an offense when $3 is used with two groups" do
      expect(1).to eq(2)
    end
  end
end
