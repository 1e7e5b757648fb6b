import { warehouseCrashSuite } from './testing/warehouse-crash-suite';

// The built warehouse consumer SIGKILLed at random points of a mixed load, against ClickHouse:
// once it has caught up, its tables equal one clean pass (testing/warehouse-crash-suite.ts).
warehouseCrashSuite('ClickHouse');
