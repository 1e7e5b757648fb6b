export { drainHttpServer } from './http-drain';
export { serveHttp, type ServeHttpOptions } from './http-serve';
export { lifecycleConfigSchema } from './lifecycle-config';
export { startService } from './start-service';
export { Shutdown, type ShutdownHook, type ShutdownOptions, type ShutdownStep } from './shutdown';
export { livenessAnswer, readiness, sharedCheck, type ProbeAnswer, type ReadinessCheck } from './probes';
