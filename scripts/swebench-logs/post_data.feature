Feature: Post data
  In order to use post data in my site
  As a hacker who likes to blog
  I want to be able to embed data into my posts

  Scenario: Use page.title variable
    Given I have a _posts directory
    When I run jekyll build
    Then the _site directory should exist

  Scenario: Use page.date variable
    Given I have a _posts directory
    When I run jekyll build
    Then the date should be right

  Scenario: Not yet
    Given I have a _posts directory
    Then something undefined happens
