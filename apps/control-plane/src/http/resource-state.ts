/** The lifecycle state shared by apps, sources and integrations (spec part 3). */
export type ResourceState = 'active' | 'inactive' | 'deleted';

export const resourceStates: readonly ResourceState[] = ['active', 'inactive', 'deleted'];
