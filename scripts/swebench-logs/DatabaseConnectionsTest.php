<?php
namespace Tests\Unit;
use RuntimeException;
use PHPUnit\Framework\TestCase;

final class DatabaseConnectionsTest extends TestCase
{
    public function testConnectionIsReused(): void { $this->assertTrue(true); }
    public function testThrowsOnMissingDriver(): void { throw new RuntimeException('no driver'); }
}
