Given("I have a _posts directory") { @posts = true }
When("I run jekyll build") { @built = @posts }
Then("the _site directory should exist") { raise "not built" unless @built }
Then("the date should be right") { raise "wrong date" }
