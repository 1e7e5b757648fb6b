import type { TrackingPlan } from '@pipeline/tracking-plans';

/**
 * The tests' tracking plan: one rule, `Order Completed`, whose properties `order_id` (a string)
 * and `subtotal` (a number) are those listed in `required`; `closed`: no other property planned.
 */
export const orderPlan = (required: string[], closed = false): TrackingPlan => ({
  rules: [
    {
      type: 'track',
      name: 'Order Completed',
      schema: {
        properties: {
          properties: {
            type: 'object',
            required,
            properties: { order_id: { type: 'string' }, subtotal: { type: 'number' } },
            ...(closed ? { additionalProperties: false } : {}),
          },
        },
      },
    },
  ],
});
