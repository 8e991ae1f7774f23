<?php
use PHPUnit\Framework\TestCase;

final class CalculatorTest extends TestCase
{
    public function testAddsNumbers(): void { $this->assertSame(4, 2 + 2); }
    public function testDividesByZero(): void { $this->assertSame(1, intdiv(1, 1) + 1); }
    public function testLater(): void { $this->markTestSkipped('not now'); }
    public function testIncomplete(): void { $this->markTestIncomplete('todo'); }
    /** @dataProvider pairs */
    public function testSumOfPair(int $a, int $b, int $sum): void { $this->assertSame($sum, $a + $b); }
    public static function pairs(): array { return ['small' => [1, 1, 2], 'wrong' => [2, 2, 5]]; }
}
