// Logistic regression, TABLA Table 3 LogisticR: 54 features.
// Objective -y log s(<w,x>) - (1-y) log(1 - s(<w,x>)), y in {0, 1};
// gradient (sigmoid(<w,x>) - y) * x.
m = 54;                        // features
n = 1;                         // threads

model_input x[m];
model_output y;
model w[m];
gradient g[m] -> w;

iterator i[0:m-1];
iterator t[0:n-1];

learning_rate = 0.05;
mini_batch = 1000;

d = sum[i](w[i] * x[i]);
p = sigmoid(d);                // PWL sigmoid table of the PE
e = p - y;
g[i] = e * x[i];

w[i] = sum[t](w[i]) / n;
